/**
 * Compile-time checks of the catalogue's derived types: this file only builds if every
 * `@ts-expect-error` below is an error, i.e. if required fields really are required.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EventOf, NormalizedEvent } from '../../src/events/catalogue.js';

const base = { action: 'GetObject', timestamp: 1714564800, provider: 'aws' } as const;

const complete: EventOf<'GetObject'> = { ...base, bucket: 'b', objectKey: 'k', bytes: 1 };
const withOptionals: EventOf<'GetObject'> = { ...base, bucket: 'b', objectKey: 'k', bytes: 1, versionId: 'v', isBillableEgress: false, extra: { serviceId: 's' } };

// @ts-expect-error bucket is required
const noBucket: EventOf<'GetObject'> = { ...base, objectKey: 'k', bytes: 1 };
// @ts-expect-error objectKey is required
const noKey: EventOf<'GetObject'> = { ...base, bucket: 'b', bytes: 1 };
// @ts-expect-error bytes is required
const noBytes: EventOf<'GetObject'> = { ...base, bucket: 'b', objectKey: 'k' };
// @ts-expect-error provider is required
const noProvider: EventOf<'GetObject'> = { action: 'GetObject', timestamp: 1, bucket: 'b', objectKey: 'k', bytes: 1 };
// @ts-expect-error timestamp is epoch seconds, not the wire string
const wireTimestamp: EventOf<'GetObject'> = { ...base, timestamp: '2024-05-01T12:00:00Z', bucket: 'b', objectKey: 'k', bytes: 1 };
// @ts-expect-error bytes is a number
const textBytes: EventOf<'GetObject'> = { ...base, bucket: 'b', objectKey: 'k', bytes: '1' };
// @ts-expect-error the action is the kind's own
const otherAction: EventOf<'GetObject'> = { ...base, action: 'PutObject', bucket: 'b', objectKey: 'k', bytes: 1 };
// @ts-expect-error uploadId is not a GetObject field
const foreignField: EventOf<'GetObject'> = { ...base, bucket: 'b', objectKey: 'k', bytes: 1, uploadId: 'u' };
// @ts-expect-error aliases exist on the wire only
const alias: EventOf<'GetObject'> = { ...base, bucketName: 'b', objectKey: 'k', bytes: 1 };
// @ts-expect-error copySource needs objectKey
const partialSource: EventOf<'CopyObject'> = { ...base, action: 'CopyObject', bucket: 'b', objectKey: 'k', copySource: { bucket: 'b' } };

/** The union narrows by action to the kind's fields. */
function uploadIdOf(event: NormalizedEvent): string | undefined {
  if (event.action === 'UploadPart') return event.uploadId;
  // @ts-expect-error uploadId is not known on every kind
  return event.uploadId;
}

describe('EventOf', () => {
  it('types the normalized events', () => {
    assert.equal(complete.bytes, 1);
    assert.equal(withOptionals.isBillableEgress, false);
    assert.equal(uploadIdOf({ action: 'UploadPart', timestamp: 1, provider: 'aws', bucket: 'b', uploadId: 'u', partNumber: 1, bytes: 1 }), 'u');
    // The values above exist only for the compiler; keep them referenced.
    assert.ok([noBucket, noKey, noBytes, noProvider, wireTimestamp, textBytes, otherAction, foreignField, alias, partialSource]);
  });
});
