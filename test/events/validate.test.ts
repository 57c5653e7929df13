/**
 * Black-box tests of validate(): what goes in is a wire event, what comes out is asserted as concrete
 * values (fixture constants), never recomputed by a second normalizer.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ACTION_NAMES, COMMON_FIELDS, FIELD_FALLBACKS, FIELDS, KINDS } from '../../src/events/catalogue.js';
import type { ActionName, EventRecord } from '../../src/events/catalogue.js';
import type { FieldError } from '../../src/events/field-error.js';
import { MAX_EXTRA_DEPTH, MAX_FIELD_ERRORS, createEventValidator } from '../../src/events/validate.js';
import {
  FIELD_VALUES,
  LIMIT_STRINGS,
  WIRE_NOW_SECONDS,
  WIRE_PROVIDER,
  WIRE_TIMESTAMP,
  WIRE_TIMESTAMP_SECONDS,
  fullWireEvent,
  minimalWireEvent,
} from '../support/events.js';
import type { WireEvent } from '../support/events.js';

const MAX_FUTURE_SECONDS = 900;
const validator = createEventValidator({ maxFutureSeconds: MAX_FUTURE_SECONDS, maxExtraBytes: 4096 });

function accept(input: unknown, now = WIRE_NOW_SECONDS): EventRecord {
  const result = validator.validate(input, now);
  if (!result.ok) assert.fail(`expected acceptance, got ${JSON.stringify(result.errors, null, 2)}`);
  return result.event;
}

function reject(input: unknown, now = WIRE_NOW_SECONDS): FieldError[] {
  const result = validator.validate(input, now);
  if (result.ok) assert.fail(`expected rejection, got ${JSON.stringify(result.event)}`);
  return result.errors;
}

/** The single error of a rejected input. */
function onlyError(input: unknown): FieldError {
  const errors = reject(input);
  assert.equal(errors.length, 1, JSON.stringify(errors, null, 2));
  return errors[0]!;
}

/** The normalized form of a fixture: only the timestamp changes (fixtures are otherwise normalized). */
function normalizedFixture(wire: WireEvent): Record<string, unknown> {
  return { ...wire, timestamp: WIRE_TIMESTAMP_SECONDS };
}

const OPTIONAL_COMMON = ['customerId', 'featureId', 'clientType', 'clientId', 'eventId'] as const;

describe('every kind of the catalogue', () => {
  for (const action of ACTION_NAMES) {
    const kind = KINDS[action];
    describe(action, () => {
      it('accepts the full event with every field preserved', () => {
        assert.deepEqual(accept(fullWireEvent(action)), normalizedFixture(fullWireEvent(action)));
      });

      it('accepts the minimal event', () => {
        const expected = normalizedFixture(minimalWireEvent(action));
        if (action === 'GetObject') expected.isBillableEgress = true;
        assert.deepEqual(accept(minimalWireEvent(action)), expected);
      });

      for (const field of ['action', 'timestamp', 'provider', ...kind.required]) {
        it(`names exactly /${field} when ${field} is missing`, () => {
          const wire = fullWireEvent(action);
          delete wire[field];
          const error = onlyError(wire);
          assert.equal(error.path, `/${field}`);
          assert.equal(error.message, `${field} is required`);
          assert.equal(error.received, 'nothing');
        });

        it(`names /${field} when ${field} is null`, () => {
          const error = onlyError(fullWireEvent(action, { [field]: null }));
          assert.deepEqual([error.path, error.message, error.received], [`/${field}`, `${field} is required`, 'null']);
        });
      }

      for (const field of ['provider', ...kind.required.filter((name) => FIELDS[name].type === 'string')]) {
        it(`refuses an empty ${field}`, () => {
          const error = onlyError(fullWireEvent(action, { [field]: '' }));
          assert.deepEqual([error.path, error.message, error.received], [`/${field}`, `${field} must not be empty`, 'string ""']);
        });
      }

      for (const field of [...OPTIONAL_COMMON, ...kind.optional]) {
        for (const empty of ['', null]) {
          it(`treats ${field}: ${JSON.stringify(empty)} as absent`, () => {
            const expected = normalizedFixture(fullWireEvent(action));
            delete expected[field];
            if (field === 'isBillableEgress') expected.isBillableEgress = true;
            // A field with a fallback takes the other field's value instead (objectCategory ← fileType).
            const source = (FIELD_FALLBACKS as Record<string, string>)[field];
            if (source !== undefined) expected[field] = expected[source];
            assert.deepEqual(accept(fullWireEvent(action, { [field]: empty })), expected);
          });
        }
      }

      it('drops catalogue fields of other kinds sent as "" or null', () => {
        const own = new Set<string>([...kind.required, ...kind.optional]);
        const others = Object.keys(FIELDS).filter((name) => !own.has(name));
        const empties = Object.fromEntries(others.map((name, i) => [name, i % 2 === 0 ? '' : null]));
        assert.deepEqual(accept(fullWireEvent(action, empties)), normalizedFixture(fullWireEvent(action)));
      });
    });
  }
});

describe('common fields', () => {
  it('drops fractions and converts offsets to UTC', () => {
    for (const timestamp of ['2024-05-01T12:00:00.999Z', '2024-05-01T14:00:00.5+02:00', '2024-05-01T06:30:00-0530', '2024-05-01t13:00:00+01']) {
      assert.equal(accept(minimalWireEvent('ListBuckets', { timestamp })).timestamp, WIRE_TIMESTAMP_SECONDS, timestamp);
    }
  });

  it('refuses timestamps that are not ISO 8601 date-times with a zone', () => {
    for (const timestamp of ['2024-02-30T12:00:00Z', '2024-05-01T24:00:00Z', '2024-05-01T12:00:60Z', '2024-05-01T12:00:00', '2024-05-01 12:00:00Z', 'yesterday']) {
      const error = onlyError(minimalWireEvent('ListBuckets', { timestamp }));
      assert.equal(error.path, '/timestamp');
      assert.equal(error.message, 'timestamp must be an ISO 8601 date-time with a time zone, e.g. 2024-05-01T12:00:00Z');
      assert.equal(error.received, `string ${JSON.stringify(timestamp)}`);
    }
    for (const [timestamp, received] of [[WIRE_TIMESTAMP_SECONDS, `number ${WIRE_TIMESTAMP_SECONDS}`], [true, 'boolean true'], [{}, 'object']] as const) {
      const error = onlyError(minimalWireEvent('ListBuckets', { timestamp }));
      assert.deepEqual([error.path, error.received], ['/timestamp', received]);
    }
  });

  it('reads each timestamp as itself when texts repeat and alternate (the validator keeps the last one parsed)', () => {
    const texts = ['2024-05-01T12:00:00Z', '2024-05-01T12:00:00Z', '2024-05-01T12:00:01Z', 'yesterday', 'yesterday', '2024-05-01T12:00:00Z', '2024-05-01T12:00:01Z'];
    const expected = [WIRE_TIMESTAMP_SECONDS, WIRE_TIMESTAMP_SECONDS, WIRE_TIMESTAMP_SECONDS + 1, undefined, undefined, WIRE_TIMESTAMP_SECONDS, WIRE_TIMESTAMP_SECONDS + 1];
    const got = texts.map((timestamp) => {
      const result = validator.validate(minimalWireEvent('ListBuckets', { timestamp }), WIRE_NOW_SECONDS);
      return result.ok ? result.event.timestamp : undefined;
    });
    assert.deepEqual(got, expected);
  });

  it(`accepts a timestamp up to ${MAX_FUTURE_SECONDS} s ahead of the server clock, not one more`, () => {
    const now = WIRE_TIMESTAMP_SECONDS - MAX_FUTURE_SECONDS;
    assert.equal(accept(minimalWireEvent('ListBuckets'), now).timestamp, WIRE_TIMESTAMP_SECONDS);
    const [error, ...rest] = reject(minimalWireEvent('ListBuckets'), now - 1);
    assert.deepEqual(rest, []);
    assert.equal(error!.path, '/timestamp');
    assert.equal(
      error!.message,
      "timestamp is 901 seconds ahead of the server clock (2024-05-01T11:44:59Z); at most 900 are accepted, so check the client's clock",
    );
    assert.equal(error!.expected, 'at most 2024-05-01T11:59:59Z');
    assert.equal(error!.received, `string "${WIRE_TIMESTAMP}"`);
  });

  it('lowercases the provider', () => {
    assert.equal(accept(minimalWireEvent('ListBuckets', { provider: 'BackBlaze' })).provider, 'backblaze');
    assert.equal(accept(minimalWireEvent('ListBuckets', { provider: 'AWS-us-East-1' })).provider, 'aws-us-east-1');
  });

  it('refuses a provider that is not 1 to 32 letters, digits or hyphens', () => {
    for (const provider of ['amazon s3', 'a'.repeat(33), 'wasabi_eu', 'ɑws']) {
      const error = onlyError(minimalWireEvent('ListBuckets', { provider }));
      assert.equal(error.path, '/provider');
      assert.equal(error.message, 'provider must be 1 to 32 letters, digits or hyphens');
    }
    assert.equal(accept(minimalWireEvent('ListBuckets', { provider: 'a'.repeat(32) })).provider, 'a'.repeat(32));
    assert.equal(onlyError(minimalWireEvent('ListBuckets', { provider: 7 })).message, 'provider must be a string');
  });

  it('accepts eventIds of 1 to 128 printable ASCII characters', () => {
    for (const eventId of ['x', '~'.repeat(128), ' !"#$%&\'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~', 'BM-upper-is-not-the-prefix', 'bm']) {
      assert.equal(accept(minimalWireEvent('ListBuckets', { eventId })).eventId, eventId);
    }
  });

  it('refuses other eventIds, and those starting with the server prefix bm-', () => {
    const cases: [unknown, string][] = [
      ['bm-0000000000001', 'eventId must not start with "bm-", which is reserved for ids the server assigns'],
      ['x'.repeat(129), 'eventId must be at most 128 characters; it has 129'],
      ['tab\there', 'eventId must hold only printable ASCII characters (0x20 to 0x7E)'],
      ['café', 'eventId must hold only printable ASCII characters (0x20 to 0x7E)'],
      [42, 'eventId must be a string'],
    ];
    for (const [eventId, message] of cases) {
      const error = onlyError(minimalWireEvent('ListBuckets', { eventId }));
      assert.deepEqual([error.path, error.message], ['/eventId', message]);
    }
  });
});

describe('action', () => {
  it('refuses Unknown (and any name not in the catalogue), listing the kinds compactly', () => {
    const error = onlyError(fullWireEvent('GetObject', { action: 'Unknown' }));
    assert.deepEqual(error, {
      path: '/action',
      message: 'action "Unknown" is not one of the 39 event kinds',
      expected: 'one of the 39 event kinds (GetObject, PutObject, PostObject, CopyObject, …)',
      received: 'string "Unknown"',
    });
  });

  it('suggests the kind a wrongly-cased name meant', () => {
    assert.equal(
      onlyError(minimalWireEvent('ListBuckets', { action: 'listbuckets' })).message,
      'action "listbuckets" is not one of the 39 event kinds; did you mean ListBuckets? (kinds are case-sensitive)',
    );
  });

  it('still checks the common fields of an event of unknown kind', () => {
    const errors = reject({ action: 'Unknown', timestamp: 'now', provider: 'a b', eventId: 'bm-1', bucket: 5 });
    assert.deepEqual(errors.map((e) => e.path), ['/action', '/eventId', '/provider', '/timestamp']);
  });

  it('says when action is missing, empty or not a string', () => {
    assert.equal(onlyError({ timestamp: WIRE_TIMESTAMP, provider: WIRE_PROVIDER }).message, 'action is required');
    assert.equal(onlyError(minimalWireEvent('ListBuckets', { action: '' })).message, 'action must not be empty');
    assert.equal(onlyError(minimalWireEvent('ListBuckets', { action: ['GetObject'] })).message, 'action must be a string naming the event kind');
  });
});

describe('strings', () => {
  it('accepts exactly 1,024 bytes of UTF-8 in every string field, whatever the characters', () => {
    for (const text of LIMIT_STRINGS) {
      assert.equal(Buffer.byteLength(text), 1024);
      const event = accept(fullWireEvent('CopyObject', { bucket: text, customerId: text, copySource: { bucket: text, objectKey: text } }));
      assert.equal(event.bucket, text);
      assert.equal(event.customerId, text);
      assert.deepEqual(event.copySource, { bucket: text, objectKey: text });
    }
  });

  it('refuses 1,025 bytes, counting bytes rather than characters', () => {
    // 513, 342, 257 and 1,025 characters respectively: all 1,025 bytes.
    for (const text of ['é'.repeat(512) + 'a', '€'.repeat(341) + 'ab', '😀'.repeat(256) + 'a', 'a'.repeat(1025)]) {
      assert.equal(Buffer.byteLength(text), 1025);
      const error = onlyError(fullWireEvent('GetObject', { objectKey: text }));
      assert.equal(error.path, '/objectKey');
      assert.equal(error.message, 'objectKey must be at most 1024 bytes of UTF-8; it has 1025');
      assert.equal(error.expected, 'string of 1 to 1024 bytes of UTF-8');
    }
  });

  it('refuses unpaired surrogates and U+0000, anywhere strings are checked', () => {
    const cases: [WireEvent, string, string][] = [
      [{ versionId: 'v\uD800' }, '/versionId', 'versionId must be well-formed Unicode; it holds an unpaired surrogate'],
      [{ objectKey: '\uDE00key' }, '/objectKey', 'objectKey must be well-formed Unicode; it holds an unpaired surrogate'],
      [{ clientId: 'a\u0000b' }, '/clientId', 'clientId must not contain the character U+0000'],
      [{ copySource: { bucket: 'b', objectKey: 'k\u0000' } }, '/copySource/objectKey', 'copySource.objectKey must not contain the character U+0000'],
    ];
    for (const [overrides, path, message] of cases) {
      const error = onlyError(fullWireEvent('CopyObject', overrides));
      assert.deepEqual([error.path, error.message], [path, message]);
    }
    const [error] = reject(fullWireEvent('DeleteObjects', { deletedObjects: [{ objectKey: 'ok' }, { objectKey: 'x', hardDeletedVersionId: '\uDBFF' }] }));
    assert.equal(error!.path, '/deletedObjects/1/hardDeletedVersionId');
  });

  it('keeps well-formed astral characters and other controls', () => {
    const text = '𝄞 \u0001\t\n ✓ 👩‍👩‍👧';
    assert.equal(accept(fullWireEvent('HeadObject', { objectKey: text })).objectKey, text);
  });

  it('refuses non-strings with the type in `received`', () => {
    const error = onlyError(fullWireEvent('HeadObject', { objectKey: 42 }));
    assert.deepEqual(error, { path: '/objectKey', message: 'objectKey must be a string', expected: 'string of 1 to 1024 bytes of UTF-8', received: 'number 42' });
  });
});

describe('numbers and booleans', () => {
  it('accepts bytes from 0 to 16 TiB', () => {
    for (const bytes of [0, 1, 5 * 2 ** 40, 2 ** 44]) assert.equal(accept(fullWireEvent('PutObject', { bytes })).bytes, bytes);
  });

  it('refuses negative, fractional, past 16 TiB and non-number bytes', () => {
    const cases: [unknown, string, string][] = [
      [-5, 'bytes must be a non-negative integer', 'number -5'],
      [1.5, 'bytes must be a non-negative integer', 'number 1.5'],
      [-0.5, 'bytes must be a non-negative integer', 'number -0.5'],
      ['5', 'bytes must be a non-negative integer', 'string "5"'],
      [2 ** 44 + 1, "bytes must be at most 17592186044416 (16 TiB, above any provider's largest object)", 'number 17592186044417'],
      [Number.MAX_SAFE_INTEGER, "bytes must be at most 17592186044416 (16 TiB, above any provider's largest object)", 'number 9007199254740991'],
      [2 ** 53, "bytes must be at most 17592186044416 (16 TiB, above any provider's largest object)", 'number 9007199254740992'],
      [1e300, "bytes must be at most 17592186044416 (16 TiB, above any provider's largest object)", 'number 1e+300'],
    ];
    for (const [bytes, message, received] of cases) {
      assert.deepEqual(onlyError(fullWireEvent('PutObject', { bytes })), {
        path: '/bytes',
        message,
        expected: 'integer 0 to 17592186044416 (16 TiB)',
        received,
      });
    }
  });

  it('treats optional bytes "" and null as absent (UploadPartCopy)', () => {
    assert.equal(accept(fullWireEvent('UploadPartCopy', { bytes: '' })).bytes, undefined);
    assert.equal(onlyError(fullWireEvent('UploadPartCopy', { bytes: -1 })).path, '/bytes');
  });

  it('accepts partNumber 1 to 10,000 only', () => {
    assert.equal(accept(fullWireEvent('UploadPart', { partNumber: 1 })).partNumber, 1);
    assert.equal(accept(fullWireEvent('UploadPart', { partNumber: 10000 })).partNumber, 10000);
    for (const partNumber of [0, 10001, 2.5, -1, '3']) {
      const error = onlyError(fullWireEvent('UploadPart', { partNumber }));
      assert.deepEqual([error.path, error.message, error.expected], ['/partNumber', 'partNumber must be an integer from 1 to 10000', 'integer 1 to 10000']);
    }
  });

  it('takes booleans strictly', () => {
    for (const force of ['true', 1, 0, 'false']) {
      const error = onlyError(fullWireEvent('DeleteBucket', { force }));
      assert.deepEqual([error.path, error.message], ['/force', 'force must be true or false (a JSON boolean, not a string)']);
    }
    assert.equal(accept(fullWireEvent('DeleteBucket', { force: false })).force, false);
  });

  it('defaults isBillableEgress to true when absent, null or "", and keeps what was sent otherwise', () => {
    assert.equal(accept(minimalWireEvent('GetObject')).isBillableEgress, true);
    assert.equal(accept(minimalWireEvent('GetObject', { isBillableEgress: null })).isBillableEgress, true);
    assert.equal(accept(minimalWireEvent('GetObject', { isBillableEgress: '' })).isBillableEgress, true);
    assert.equal(accept(minimalWireEvent('GetObject', { isBillableEgress: false })).isBillableEgress, false);
    assert.equal(accept(minimalWireEvent('GetObject', { isBillableEgress: true })).isBillableEgress, true);
    // Only GetObject has the field: elsewhere it is not invented.
    assert.equal('isBillableEgress' in accept(minimalWireEvent('PutObject')), false);
  });
});

describe('copySource', () => {
  it('drops a nested versionId sent as "" or null', () => {
    for (const versionId of ['', null]) {
      assert.deepEqual(accept(fullWireEvent('CopyObject', { copySource: { bucket: 'src', objectKey: 'a/b', versionId } })).copySource, {
        bucket: 'src',
        objectKey: 'a/b',
      });
    }
  });

  it('requires a non-empty bucket and objectKey', () => {
    const errors = reject(fullWireEvent('UploadPartCopy', { copySource: { bucket: '', versionId: 'v1' } }));
    assert.deepEqual(errors.map((e) => [e.path, e.message]), [
      ['/copySource/bucket', 'copySource.bucket must not be empty'],
      ['/copySource/objectKey', 'copySource.objectKey is required'],
    ]);
  });

  it('keeps other members as sent, and refuses values that are not objects', () => {
    const copySource = { bucket: 'b', objectKey: 'k', region: 'eu', size: { bytes: 5 } };
    assert.deepEqual(accept(fullWireEvent('CopyObject', { copySource })).copySource, copySource);
    for (const copySource of ['b/k', ['b', 'k'], 5]) {
      const error = onlyError(fullWireEvent('CopyObject', { copySource }));
      assert.deepEqual([error.path, error.message], ['/copySource', 'copySource must be an object {bucket, objectKey, versionId?}']);
    }
  });

  it('refuses other members named __proto__, constructor or prototype', () => {
    const wire = JSON.parse('{"bucket":"b","objectKey":"k","__proto__":{"polluted":1}}');
    assert.equal(onlyError(fullWireEvent('CopyObject', { copySource: wire })).path, '/copySource/__proto__');
  });
});

describe('deletedObjects', () => {
  const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ objectKey: `k/${i}` }));

  it('accepts 1 and 1,000 entries, dropping nested optionals sent as "" or null', () => {
    assert.equal(accept(fullWireEvent('DeleteObjects', { deletedObjects: entries(1000) })).deletedObjects?.length, 1000);
    const event = accept(
      fullWireEvent('DeleteObjects', {
        deletedObjects: [{ objectKey: 'a', resultingDeleteMarkerVersionId: '', hardDeletedVersionId: null }, { objectKey: 'b', hardDeletedVersionId: 'h1' }],
      }),
    );
    assert.deepEqual(event.deletedObjects, [{ objectKey: 'a' }, { objectKey: 'b', hardDeletedVersionId: 'h1' }]);
  });

  it('refuses 0 and 1,001 entries', () => {
    for (const [n, message] of [
      [0, 'deletedObjects must hold 1 to 1000 entries; it has 0'],
      [1001, 'deletedObjects must hold 1 to 1000 entries; it has 1001'],
    ] as const) {
      assert.deepEqual(onlyError(fullWireEvent('DeleteObjects', { deletedObjects: entries(n) })), {
        path: '/deletedObjects',
        message,
        expected: 'array of 1 to 1000 object {objectKey, resultingDeleteMarkerVersionId?, hardDeletedVersionId?, versionId?, isDeleteMarker?}',
        received: `array of ${n}`,
      });
    }
  });

  it('names the entry and member at fault, keeping members of its own', () => {
    const errors = reject(fullWireEvent('DeleteObjects', { deletedObjects: [{ objectKey: 'ok' }, null, { objectKey: '' }, { objectKey: 'x', size: 1 }, {}] }));
    assert.deepEqual(errors.map((e) => [e.path, e.message]), [
      ['/deletedObjects/1', 'deletedObjects[1] must be an object {objectKey, resultingDeleteMarkerVersionId?, hardDeletedVersionId?, versionId?, isDeleteMarker?}'],
      ['/deletedObjects/2/objectKey', 'deletedObjects[2].objectKey must not be empty'],
      ['/deletedObjects/4/objectKey', 'deletedObjects[4].objectKey is required'],
    ]);
    assert.deepEqual(accept(fullWireEvent('DeleteObjects', { deletedObjects: [{ objectKey: 'x', size: 1 }] })).deletedObjects, [{ objectKey: 'x', size: 1 }]);
    assert.equal(onlyError(fullWireEvent('DeleteObjects', { deletedObjects: { objectKey: 'k' } })).message, 'deletedObjects must be an array of 1 to 1000 entries');
  });
});

describe('aliases', () => {
  it('takes bucketName for bucket', () => {
    const wire = fullWireEvent('GetObject', { bucketName: 'legacy-bucket' });
    delete wire.bucket;
    assert.deepEqual(accept(wire), { ...normalizedFixture(fullWireEvent('GetObject')), bucket: 'legacy-bucket' });
  });

  it('accepts both names when they agree', () => {
    const event = accept(fullWireEvent('PutObject', { bucketName: FIELD_VALUES.bucket }));
    assert.deepEqual(event, normalizedFixture(fullWireEvent('PutObject')));
  });

  it('uses the alias when the field itself is "" or null', () => {
    assert.equal(accept(minimalWireEvent('HeadBucket', { bucket: '', bucketName: 'from-alias' })).bucket, 'from-alias');
    assert.equal(accept(minimalWireEvent('HeadBucket', { bucket: null, bucketName: 'from-alias' })).bucket, 'from-alias');
  });

  it('refuses both names with different values, at the alias path', () => {
    assert.deepEqual(onlyError(fullWireEvent('PutObject', { bucketName: 'other' })), {
      path: '/bucketName',
      message: 'bucketName (an alias of bucket) differs from bucket; send only one of them',
      expected: `the same value as bucket: string "${FIELD_VALUES.bucket}"`,
      received: 'string "other"',
    });
  });

  it('checks the alias like the field', () => {
    const wire = minimalWireEvent('HeadBucket', { bucketName: 'x'.repeat(1025) });
    delete wire.bucket;
    assert.deepEqual([onlyError(wire).path, onlyError(wire).message], ['/bucketName', 'bucketName must be at most 1024 bytes of UTF-8; it has 1025']);
  });

  it('requires bucket when neither name is given', () => {
    const wire = minimalWireEvent('HeadBucket', { bucketName: null });
    delete wire.bucket;
    assert.equal(onlyError(wire).path, '/bucket');
  });

  it('keeps an alias as an unknown field for a kind without its field', () => {
    assert.deepEqual(accept(fullWireEvent('GetObject', { fileType: 'image' })).extra, { fileType: 'image' });
    assert.deepEqual(accept(minimalWireEvent('ListBuckets', { bucketName: 'b' })).extra, { bucketName: 'b' });
  });
});

describe('unknown fields', () => {
  it('keeps them in extra exactly as sent', () => {
    const sent = { serviceId: 'svc-checkout', retries: 2, tags: ['a', { b: null }], nothing: null, empty: '', ok: false, meta: { region: 'eu', x: [] } };
    const event = accept(fullWireEvent('GetObject', sent));
    assert.deepEqual(event.extra, sent);
    assert.deepEqual(event, { ...normalizedFixture(fullWireEvent('GetObject')), extra: sent });
  });

  it('keeps catalogue fields of other kinds that carry a value', () => {
    assert.deepEqual(accept(minimalWireEvent('HeadBucket', { objectKey: 'stray', bytes: 3, versionId: '' })).extra, { objectKey: 'stray', bytes: 3 });
  });

  it('has no extra when there are none', () => {
    assert.equal('extra' in accept(fullWireEvent('GetObject')), false);
  });

  it('refuses prototype names and server-set names, at their paths', () => {
    const wire = JSON.parse(
      JSON.stringify(fullWireEvent('GetObject')).slice(0, -1) + ',"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"prototype":1,"receivedAt":5}',
    ) as WireEvent;
    const errors = reject(wire);
    assert.deepEqual(errors.map((e) => [e.path, e.message]), [
      ['/__proto__', '__proto__ cannot be used as a field name'],
      ['/constructor', 'constructor cannot be used as a field name'],
      ['/prototype', 'prototype cannot be used as a field name'],
      ['/receivedAt', 'receivedAt is set by the server; a client may not send it'],
    ]);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('builds extra without touching any prototype', () => {
    const wire = JSON.parse('{"action":"ListBuckets","timestamp":"2024-05-01T12:00:00Z","provider":"aws","toString":"x","hasOwnProperty":1}') as WireEvent;
    const event = accept(wire);
    assert.deepEqual(event.extra, { toString: 'x', hasOwnProperty: 1 });
    assert.equal(Object.getPrototypeOf(event.extra), Object.prototype);
    assert.equal(({} as Record<string, unknown>).toString, Object.prototype.toString);
  });

  it('bounds their size as JSON by maxExtraBytes', () => {
    const small = createEventValidator({ maxFutureSeconds: 0, maxExtraBytes: 32 });
    // {"note":"…"} is 11 bytes plus the value: 21 bytes of value fit, 22 do not.
    assert.ok(small.validate(minimalWireEvent('ListBuckets', { note: 'n'.repeat(21) }), WIRE_NOW_SECONDS).ok);
    const result = small.validate(minimalWireEvent('ListBuckets', { note: 'n'.repeat(22) }), WIRE_NOW_SECONDS);
    assert.deepEqual(result, {
      ok: false,
      unmapped: false,
      errors: [
        {
          path: '',
          message: 'the unknown fields ("note") take 33 bytes as JSON; at most 32 are kept',
          expected: 'unknown fields of at most 32 bytes as JSON in total',
          received: '33 bytes in 1 unknown field',
        },
      ],
    });
  });

  it(`refuses values nested deeper than ${MAX_EXTRA_DEPTH} levels (they could not always be serialized)`, () => {
    const nest = (levels: number): unknown => (levels === 0 ? 'leaf' : [nest(levels - 1)]);
    assert.deepEqual(accept(minimalWireEvent('ListBuckets', { deep: nest(MAX_EXTRA_DEPTH) })).extra, { deep: nest(MAX_EXTRA_DEPTH) });
    const error = onlyError(minimalWireEvent('ListBuckets', { deep: nest(MAX_EXTRA_DEPTH + 1) }));
    assert.deepEqual([error.path, error.message], ['/deep', `"deep" nests deeper than ${MAX_EXTRA_DEPTH} levels`]);
    // Far deeper than JSON.stringify can go: an error, not a RangeError.
    const far = JSON.parse(`{"action":"ListBuckets","timestamp":"${WIRE_TIMESTAMP}","provider":"aws","deep":${'['.repeat(100000)}${']'.repeat(100000)}}`);
    assert.equal(onlyError(far).path, '/deep');
  });
});

describe('errors', () => {
  it('refuses input that is not a JSON object, at path ""', () => {
    const cases: [unknown, string][] = [
      [[fullWireEvent('GetObject')], 'array of 1'],
      [null, 'null'],
      ['{"action":"GetObject"}', 'string "{\\"action\\":\\"GetObject\\"}"'],
      [42, 'number 42'],
      [undefined, 'nothing'],
      [new Map(), 'object'],
    ];
    for (const [input, received] of cases) {
      assert.deepEqual(reject(input), [{ path: '', message: 'an event must be a JSON object', expected: 'JSON object', received }]);
    }
  });

  it('reports every problem, sorted by path, array indices in numeric order', () => {
    const entries = Array.from({ length: 12 }, (_, i) => (i === 2 || i === 10 ? { objectKey: '' } : { objectKey: `k${i}` }));
    const errors = reject(fullWireEvent('DeleteObjects', { provider: '', bucket: 7, deletedObjects: entries, eventId: 'bm-x', zzz: 1, receivedAt: 1 }));
    assert.deepEqual(errors.map((e) => e.path), ['/bucket', '/deletedObjects/2/objectKey', '/deletedObjects/10/objectKey', '/eventId', '/provider', '/receivedAt']);
  });

  it(`gives at most ${MAX_FIELD_ERRORS}, the first by path`, () => {
    const entries = Array.from({ length: 1000 }, () => ({ objectKey: '' }));
    const errors = reject(fullWireEvent('DeleteObjects', { deletedObjects: entries }));
    assert.equal(errors.length, MAX_FIELD_ERRORS);
    assert.equal(errors[0]!.path, '/deletedObjects/0/objectKey');
    assert.equal(errors[MAX_FIELD_ERRORS - 1]!.path, `/deletedObjects/${MAX_FIELD_ERRORS - 1}/objectKey`);
  });

  it('summarises what was received, cutting long strings', () => {
    const long = 'abcdefghij'.repeat(10);
    assert.equal(onlyError(fullWireEvent('HeadObject', { objectKey: long + '\u0000' })).received, `string "${long.slice(0, 40)}…"`);
    assert.equal(onlyError(fullWireEvent('HeadObject', { objectKey: ['a', 'b', 'c'] })).received, 'array of 3');
    assert.equal(onlyError(fullWireEvent('HeadObject', { objectKey: { a: 1 } })).received, 'object');
    assert.equal(onlyError(fullWireEvent('HeadObject', { objectKey: true })).received, 'boolean true');
    // Escaped, so an error never carries the U+0000 or unpaired surrogate it reports.
    assert.equal(onlyError(fullWireEvent('HeadObject', { objectKey: 'a\u0000' })).received, 'string "a\\u0000"');
    assert.equal(onlyError(fullWireEvent('HeadObject', { objectKey: 'a\uD800' })).received, 'string "a\\ud800"');
    // A cut never splits a surrogate pair.
    assert.equal(onlyError(fullWireEvent('HeadObject', { objectKey: 'x'.repeat(39) + '😀'.repeat(400) })).received, `string "${'x'.repeat(39)}…"`);
  });

  it('escapes names in paths as JSON Pointer tokens', () => {
    const nest = (levels: number): unknown => (levels === 0 ? 'leaf' : [nest(levels - 1)]);
    const error = onlyError(fullWireEvent('CopyObject', { copySource: { bucket: 'b', objectKey: 'k', 'a/b~c': nest(MAX_EXTRA_DEPTH + 1) } }));
    assert.equal(error.path, '/copySource/a~1b~0c');
  });
});

describe('input', () => {
  function deepFreeze<T>(value: T): T {
    if (typeof value === 'object' && value !== null) {
      for (const child of Object.values(value)) deepFreeze(child);
      Object.freeze(value);
    }
    return value;
  }

  it('is never mutated, whether valid or not', () => {
    const inputs: WireEvent[] = [
      fullWireEvent('CopyObject', { bucketName: FIELD_VALUES.bucket, versionId: '', copySource: { bucket: 'b', objectKey: 'k', versionId: null }, note: { a: [1] } }),
      fullWireEvent('DeleteObjects', { deletedObjects: [{ objectKey: 'a', hardDeletedVersionId: '' }], featureId: null }),
      minimalWireEvent('GetObject', { timestamp: '2024-05-01T14:00:00.5+02:00', provider: 'AWS' }),
      fullWireEvent('DeleteObjects', { deletedObjects: [{ objectKey: '' }], bucket: null, bucketName: 'x', receivedAt: 1 }),
    ];
    for (const input of inputs) {
      const before = JSON.stringify(input);
      // Frozen: any write would throw (ES modules are strict).
      validator.validate(deepFreeze(input), WIRE_NOW_SECONDS);
      assert.equal(JSON.stringify(input), before);
    }
  });

  it('shares no nested object with the output', () => {
    const input = fullWireEvent('DeleteObjects');
    const event = accept(input);
    assert.notEqual(event.deletedObjects, input.deletedObjects);
    assert.notEqual(event.deletedObjects?.[0], (input.deletedObjects as unknown[])[0]);
    const copy = fullWireEvent('CopyObject');
    assert.notEqual(accept(copy).copySource, copy.copySource);
  });
});

describe('the catalogue', () => {
  it('has the kinds and common fields these tests assume', () => {
    assert.equal(ACTION_NAMES.length, 39);
    assert.deepEqual(
      Object.keys(COMMON_FIELDS).filter((name) => !COMMON_FIELDS[name as keyof typeof COMMON_FIELDS].required),
      [...OPTIONAL_COMMON],
    );
    const kinds: ActionName[] = ['GetObject', 'UploadPartCopy', 'DeleteBucket', 'CopyObject', 'DeleteObjects'];
    for (const kind of kinds) assert.ok(kind in KINDS);
  });
});
