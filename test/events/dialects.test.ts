/**
 * The two wire dialects (shared/spec/wire-format.md): the Java collector's field names and the SDKs'
 * (the OpenAPI document behind them) map onto the same typed fields, and a member that can be kept is
 * never the reason an event is refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ACTION_NAMES, FIELD_FALLBACKS, KINDS, SDK_MEMBERS } from '../../src/events/catalogue.js';
import type { EventRecord } from '../../src/events/catalogue.js';
import { createEventValidator } from '../../src/events/validate.js';
import { WIRE_NOW_SECONDS, WIRE_TIMESTAMP, minimalWireEvent } from '../support/events.js';

const validator = createEventValidator({ maxFutureSeconds: 900, maxExtraBytes: 4096 });

function accept(input: unknown): EventRecord {
  const result = validator.validate(input, WIRE_NOW_SECONDS);
  if (!result.ok) assert.fail(`expected acceptance, got ${JSON.stringify(result.errors, null, 2)}`);
  return result.event;
}

const deleteObject = (fields: Record<string, unknown>) => minimalWireEvent('DeleteObject', fields);
const deleteObjects = (...entries: Record<string, unknown>[]) => minimalWireEvent('DeleteObjects', { deletedObjects: entries });

describe('SDK dialect: DeleteObject {versionId, isDeleteMarker}', () => {
  it('isDeleteMarker true: versionId is the delete marker created', () => {
    const event = accept(deleteObject({ versionId: 'v-dm', isDeleteMarker: true }));
    assert.equal(event.resultingDeleteMarkerVersionId, 'v-dm');
    assert.equal(event.hardDeletedVersionId, undefined);
    assert.equal(event.extra, undefined);
    assert.equal((event as unknown as Record<string, unknown>).versionId, undefined);
  });

  it('isDeleteMarker false, null or absent: versionId is the version removed', () => {
    for (const flag of [{ isDeleteMarker: false }, { isDeleteMarker: null }, {}]) {
      const event = accept(deleteObject({ versionId: 'v-gone', ...flag }));
      assert.equal(event.hardDeletedVersionId, 'v-gone', JSON.stringify(flag));
      assert.equal(event.resultingDeleteMarkerVersionId, undefined);
      assert.equal(event.extra, undefined);
    }
  });

  it('agrees with the Java dialect field when both are sent with the same id', () => {
    const event = accept(deleteObject({ versionId: 'v1', isDeleteMarker: false, hardDeletedVersionId: 'v1' }));
    assert.equal(event.hardDeletedVersionId, 'v1');
    assert.equal(event.extra, undefined);
  });

  it('keeps a pair it cannot map as sent, never refusing it', () => {
    // The target field already holds another id: the Java dialect's value stands, the pair is kept.
    const conflict = accept(deleteObject({ versionId: 'v2', isDeleteMarker: true, resultingDeleteMarkerVersionId: 'v1' }));
    assert.equal(conflict.resultingDeleteMarkerVersionId, 'v1');
    assert.deepEqual(conflict.extra, { versionId: 'v2', isDeleteMarker: true });
    // No version id: nothing to map, the flag is kept.
    assert.deepEqual(accept(deleteObject({ versionId: '', isDeleteMarker: true })).extra, { isDeleteMarker: true });
  });

  it('checks the types of both members', () => {
    const result = validator.validate(deleteObject({ versionId: 5, isDeleteMarker: 'yes' }), WIRE_NOW_SECONDS);
    assert.equal(result.ok, false);
    if (!result.ok) assert.deepEqual(result.errors.map((e) => e.path), ['/isDeleteMarker', '/versionId']);
  });
});

describe('SDK dialect: deletedObjects entries {objectKey, versionId?, isDeleteMarker?}', () => {
  it('maps each entry onto the two version fields', () => {
    const event = accept(
      deleteObjects(
        { objectKey: 'a', versionId: 'dm-a', isDeleteMarker: true },
        { objectKey: 'b', versionId: 'v-b', isDeleteMarker: false },
        { objectKey: 'c', versionId: 'v-c' },
        { objectKey: 'd' },
        { objectKey: 'e', versionId: '', isDeleteMarker: null },
      ),
    );
    assert.deepEqual(event.deletedObjects, [
      { objectKey: 'a', resultingDeleteMarkerVersionId: 'dm-a' },
      { objectKey: 'b', hardDeletedVersionId: 'v-b' },
      { objectKey: 'c', hardDeletedVersionId: 'v-c' },
      { objectKey: 'd' },
      { objectKey: 'e' },
    ]);
  });

  it('keeps unmappable pairs and unknown members in their entry', () => {
    const event = accept(
      deleteObjects(
        { objectKey: 'a', versionId: 'v2', hardDeletedVersionId: 'v1' },
        { objectKey: 'b', isDeleteMarker: true, size: 17, tags: { team: 'x' } },
      ),
    );
    assert.deepEqual(event.deletedObjects, [
      { objectKey: 'a', hardDeletedVersionId: 'v1', versionId: 'v2' },
      { objectKey: 'b', isDeleteMarker: true, size: 17, tags: { team: 'x' } },
    ]);
  });

  it('bounds unknown members with the unknown top-level fields, by --max-extra-bytes', () => {
    const small = createEventValidator({ maxFutureSeconds: 900, maxExtraBytes: 64 });
    const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ objectKey: `k${i}`, size: 1000 + i }));
    // {"size":1000} is 13 bytes: four entries fit in 64, five do not.
    assert.ok(small.validate(minimalWireEvent('DeleteObjects', { deletedObjects: entries(4) }), WIRE_NOW_SECONDS).ok);
    const result = small.validate(minimalWireEvent('DeleteObjects', { deletedObjects: entries(5) }), WIRE_NOW_SECONDS);
    assert.equal(result.ok, false);
    if (!result.ok) {
      assert.deepEqual(result.errors, [
        {
          path: '',
          message: 'the unknown fields ("deletedObjects[0].size", "deletedObjects[1].size", "deletedObjects[2].size", …) take 65 bytes as JSON; at most 64 are kept',
          expected: 'unknown fields of at most 64 bytes as JSON in total',
          received: '65 bytes in 5 unknown fields',
        },
      ]);
    }
  });
});

describe('fileType and objectCategory', () => {
  it('keeps both when they differ (two independent fields in the SDKs)', () => {
    const event = accept(minimalWireEvent('PutObject', { objectCategory: 'photo', fileType: 'image/png' }));
    assert.equal(event.objectCategory, 'photo');
    assert.equal(event.fileType, 'image/png');
    assert.equal(event.extra, undefined);
  });

  it('takes fileType for objectCategory when objectCategory is not given (older drafts)', () => {
    for (const objectCategory of [undefined, null, '']) {
      const event = accept(minimalWireEvent('PostObject', { objectCategory, fileType: 'video' }));
      assert.equal(event.objectCategory, 'video');
      assert.equal(event.fileType, 'video');
    }
  });

  it('keeps isSynthetic as sent, and checks it is a boolean', () => {
    assert.equal(accept(minimalWireEvent('PutObject', { isSynthetic: false })).isSynthetic, false);
    assert.equal(validator.validate(minimalWireEvent('PutObject', { isSynthetic: 'no' }), WIRE_NOW_SECONDS).ok, false);
  });
});

describe('ListObjectVersions', () => {
  it('keeps the SDKs objectKey (the listed key) and the Java collector objectKeyPrefix', () => {
    assert.equal(accept(minimalWireEvent('ListObjectVersions', { objectKey: 'docs/a.txt' })).objectKey, 'docs/a.txt');
    const java = accept(minimalWireEvent('ListObjectVersions', { objectKeyPrefix: 'docs/' }));
    assert.deepEqual([java.objectKey, java.objectKeyPrefix], [undefined, 'docs/']);
  });
});

describe('the Java collector\'s action "Unknown"', () => {
  it('is refused, and marked unmapped (quarantined under a code of its own)', () => {
    const unknown = validator.validate({ action: 'Unknown', timestamp: WIRE_TIMESTAMP, provider: 'aws', classNames: 'a.B,a.C' }, WIRE_NOW_SECONDS);
    assert.deepEqual(unknown.ok ? undefined : [unknown.unmapped, unknown.errors[0]?.path], [true, '/action']);
    const typo = validator.validate({ action: 'getObject', timestamp: WIRE_TIMESTAMP, provider: 'aws' }, WIRE_NOW_SECONDS);
    assert.equal(typo.ok ? undefined : typo.unmapped, false);
  });
});

describe('the dialect declarations of the catalogue', () => {
  it('name fields of the kinds they list', () => {
    for (const { member, kinds } of SDK_MEMBERS) {
      for (const kind of kinds) assert.ok((KINDS[kind].optional as readonly string[]).includes(member), `${kind}.${member}`);
    }
    for (const [field, source] of Object.entries(FIELD_FALLBACKS)) {
      for (const kind of ACTION_NAMES) {
        const own: readonly string[] = KINDS[kind].optional;
        assert.equal(own.includes(field), own.includes(source), `${kind}: ${field} and ${source} come together`);
      }
    }
  });
});
