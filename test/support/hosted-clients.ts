/**
 * The wire bodies of the hosted service's published clients, one event of every kind with every field
 * filled, and what bucketmeter must store for each:
 *
 * - the SDKs generated (by Fern) from its OpenAPI document: TypeScript, Python and Go. They differ in
 *   the timestamp form they write; their fields are the document's (SDK_FIELDS, transcribed from
 *   dashdive/fern fern/openapi/openapi.json: a oneOf over 38 kinds discriminated by `action`);
 * - its Java collector (dashdive/collector-sdk-java 1.0.10, S3DistinctEventDataExtractor): 37 kinds
 *   and `Unknown`, "" for absent ids, a `serviceId` extra, whole-second UTC timestamps, in batches.
 */
import type { ActionName } from '../../src/events/catalogue.js';
import { FIELD_VALUES } from './events.js';

export const SDKS = ['typescript', 'python', 'go'] as const;
export type Sdk = (typeof SDKS)[number];

/** The same instant, 2024-05-01T12:00:00.25Z, as each SDK writes it. */
export const SDK_TIMESTAMPS: Record<Sdk, string> = {
  typescript: '2024-05-01T12:00:00.250Z', // Date.prototype.toISOString
  python: '2024-05-01T12:00:00.250000+00:00', // datetime.isoformat, aware UTC
  go: '2024-05-01T14:00:00.25+02:00', // time.Time in a local zone, RFC 3339 with nanoseconds
};
export const STORED_TIMESTAMP = '2024-05-01T12:00:00Z';

const PER_BUCKET = ['bucket'] as const;
const PER_OBJECT = ['bucket', 'objectKey'] as const;

/** Each kind's own fields in the OpenAPI document (every one is filled in the bodies below). */
export const SDK_FIELDS: Partial<Record<ActionName, readonly string[]>> = {
  ListBuckets: [],
  DeleteBucket: ['bucket', 'force'],
  HeadBucket: PER_BUCKET,
  CreateBucket: PER_BUCKET,
  GetBucketAcl: PER_BUCKET,
  GetBucketCors: PER_BUCKET,
  GetBucketEncryption: PER_BUCKET,
  GetBucketLocation: PER_BUCKET,
  GetBucketVersioning: PER_BUCKET,
  PutBucketAcl: PER_BUCKET,
  PutBucketCors: PER_BUCKET,
  PutBucketEncryption: PER_BUCKET,
  DeleteBucketCors: PER_BUCKET,
  DeleteBucketEncryption: PER_BUCKET,
  GetObjectLockConfiguration: PER_BUCKET,
  PutObjectLockConfiguration: PER_BUCKET,
  ListObjectsV2: PER_BUCKET,
  HeadObject: PER_OBJECT,
  ListObjectVersions: PER_OBJECT,
  GetObjectAcl: PER_OBJECT,
  PutObjectAcl: PER_OBJECT,
  GetObjectRetention: PER_OBJECT,
  PutObjectRetention: PER_OBJECT,
  GetObjectLegalHold: PER_OBJECT,
  PutObjectLegalHold: PER_OBJECT,
  GetObject: ['bucket', 'objectKey', 'bytes', 'versionId'],
  PutObject: ['bucket', 'objectKey', 'bytes', 'versionId', 'objectCategory', 'fileType', 'isSynthetic'],
  PostObject: ['bucket', 'objectKey', 'bytes', 'versionId', 'objectCategory', 'fileType', 'isSynthetic'],
  CopyObject: ['bucket', 'objectKey', 'versionId', 'copySource'],
  DeleteObject: ['bucket', 'objectKey', 'versionId', 'isDeleteMarker'],
  DeleteObjects: ['bucket', 'deletedObjects'],
  CreateMultipartUpload: ['bucket', 'objectKey', 'uploadId'],
  CompleteMultipartUpload: ['bucket', 'uploadId', 'versionId'],
  AbortMultipartUpload: ['bucket', 'uploadId'],
  UploadPart: ['bucket', 'uploadId', 'bytes', 'partNumber'],
  UploadPartCopy: ['bucket', 'uploadId', 'bytes', 'partNumber', 'copySource'],
  ListParts: ['bucket', 'uploadId'],
  ListMultipartUploads: PER_BUCKET,
};

export const SDK_ACTIONS = Object.keys(SDK_FIELDS) as ActionName[];

/** Values of the SDK-only members; fileType differs from objectCategory, as the SDKs allow. */
const SDK_VALUES: Record<string, unknown> = {
  ...FIELD_VALUES,
  fileType: 'image/jpeg',
  isSynthetic: false,
  deletedObjects: [
    { objectKey: 'tmp/a.part', versionId: 'dm-a', isDeleteMarker: true },
    { objectKey: 'tmp/b.part', versionId: 'v-b', isDeleteMarker: false },
    { objectKey: 'tmp/c.part', versionId: 'v-c' },
  ],
};

/** One event as `sdk` sends it: every field of the document filled. */
export function sdkBody(sdk: Sdk, action: ActionName, customerId: string): Record<string, unknown> {
  const body: Record<string, unknown> = {
    action,
    timestamp: SDK_TIMESTAMPS[sdk],
    provider: 'wasabi',
    customerId,
    featureId: 'gallery-export',
    clientType: `${sdk}-sdk`,
    clientId: 'device-7f3a9c',
  };
  for (const field of SDK_FIELDS[action]!) body[field] = structuredClone(SDK_VALUES[field]);
  // Both readings of DeleteObject's pair, across the SDKs.
  if (action === 'DeleteObject') body.isDeleteMarker = sdk !== 'python';
  return body;
}

/** What /v1/events must show for an SDK body (without eventId and receivedAt): the dialect mapped. */
export function sdkStored(body: Record<string, unknown>): Record<string, unknown> {
  const { versionId, isDeleteMarker, ...rest } = body;
  const stored: Record<string, unknown> = { ...body, timestamp: STORED_TIMESTAMP };
  switch (body.action) {
    case 'GetObject':
      return { ...stored, isBillableEgress: true };
    case 'DeleteObject':
      return { ...rest, timestamp: STORED_TIMESTAMP, [isDeleteMarker ? 'resultingDeleteMarkerVersionId' : 'hardDeletedVersionId']: versionId };
    case 'DeleteObjects':
      return {
        ...stored,
        deletedObjects: [
          { objectKey: 'tmp/a.part', resultingDeleteMarkerVersionId: 'dm-a' },
          { objectKey: 'tmp/b.part', hardDeletedVersionId: 'v-b' },
          { objectKey: 'tmp/c.part', hardDeletedVersionId: 'v-c' },
        ],
      };
    default:
      return stored;
  }
}

/** The fields the Java collector emits per kind (absent ids as ""), all filled. */
const JAVA_FIELDS: Partial<Record<ActionName | 'Unknown', Record<string, unknown>>> = {
  GetObject: { bucket: FIELD_VALUES.bucket, objectKey: FIELD_VALUES.objectKey, versionId: '', bytes: 4, isBillableEgress: false },
  PutObject: { bucket: FIELD_VALUES.bucket, objectKey: FIELD_VALUES.objectKey, versionId: FIELD_VALUES.versionId, bytes: FIELD_VALUES.bytes, objectCategory: 'image' },
  CopyObject: { bucket: FIELD_VALUES.bucket, objectKey: 'copies/beach.jpg', versionId: '', copySource: { bucket: 'media-archive', objectKey: 'photos/beach.jpg', versionId: '' } },
  // When a version is deleted S3 echoes its id, so the collector fills both fields with it.
  DeleteObject: { bucket: FIELD_VALUES.bucket, objectKey: FIELD_VALUES.objectKey, resultingDeleteMarkerVersionId: 'v-9', hardDeletedVersionId: 'v-9' },
  DeleteObjects: {
    bucket: FIELD_VALUES.bucket,
    objectKeyPrefix: 'shared',
    deletedObjects: [{ objectKey: 'shared-prefix/a', hardDeletedVersionId: 'v-1' }, { objectKey: 'shared/b', resultingDeleteMarkerVersionId: 'dm-2' }, { objectKey: 'shared/c', resultingDeleteMarkerVersionId: '' }],
  },
  CreateMultipartUpload: { bucket: FIELD_VALUES.bucket, objectKey: FIELD_VALUES.objectKey, uploadId: FIELD_VALUES.uploadId },
  CompleteMultipartUpload: { bucket: FIELD_VALUES.bucket, objectKey: FIELD_VALUES.objectKey, uploadId: FIELD_VALUES.uploadId, versionId: '' },
  AbortMultipartUpload: { bucket: FIELD_VALUES.bucket, uploadId: FIELD_VALUES.uploadId },
  UploadPart: { bucket: FIELD_VALUES.bucket, uploadId: FIELD_VALUES.uploadId, partNumber: 3, bytes: 5242880 },
  UploadPartCopy: { bucket: FIELD_VALUES.bucket, uploadId: FIELD_VALUES.uploadId, partNumber: 4, copySource: { bucket: 'media-archive', objectKey: 'big.bin', versionId: 'v-src' } },
  ListParts: { bucket: FIELD_VALUES.bucket, uploadId: FIELD_VALUES.uploadId },
  ListMultipartUploads: { bucket: FIELD_VALUES.bucket },
  ListBuckets: {},
  ListObjects: { bucket: FIELD_VALUES.bucket, objectKeyPrefix: '' },
  ListObjectVersions: { bucket: FIELD_VALUES.bucket, objectKeyPrefix: 'photos/' },
  Unknown: { classNames: 'software.amazon.awssdk.services.s3.model.PutBucketTaggingRequest,software.amazon.awssdk.services.s3.model.PutBucketTaggingResponse' },
};
for (const action of ['DeleteBucket', 'HeadBucket', 'CreateBucket', 'GetBucketAcl', 'GetBucketCors', 'GetBucketEncryption', 'GetBucketLocation', 'GetBucketVersioning', 'PutBucketAcl', 'PutBucketCors', 'PutBucketEncryption', 'DeleteBucketCors', 'DeleteBucketEncryption', 'GetObjectLockConfiguration', 'PutObjectLockConfiguration'] as const) {
  JAVA_FIELDS[action] = { bucket: FIELD_VALUES.bucket };
}
for (const action of ['HeadObject', 'GetObjectAcl', 'PutObjectAcl', 'GetObjectRetention', 'PutObjectRetention', 'GetObjectLegalHold', 'PutObjectLegalHold'] as const) {
  JAVA_FIELDS[action] = { bucket: FIELD_VALUES.bucket, objectKey: FIELD_VALUES.objectKey };
}

/** The collector's 37 kinds, and Unknown. */
export const JAVA_ACTIONS = Object.keys(JAVA_FIELDS) as (ActionName | 'Unknown')[];

export function javaBody(action: ActionName | 'Unknown', customerId: string): Record<string, unknown> {
  return {
    action,
    timestamp: STORED_TIMESTAMP,
    provider: 'aws',
    serviceId: 'checkout-service.jar',
    customerId,
    featureId: 'invoices',
    clientType: '',
    clientId: 'web-1',
    ...structuredClone(JAVA_FIELDS[action]),
  };
}

/** What /v1/events must show for a Java collector body: "" dropped everywhere, the rest as sent. */
export function javaStored(body: Record<string, unknown>): Record<string, unknown> {
  const dropEmpty = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(dropEmpty)
      : typeof value === 'object' && value !== null
        ? Object.fromEntries(Object.entries(value).filter(([, v]) => v !== '').map(([k, v]) => [k, dropEmpty(v)]))
        : value;
  return dropEmpty(body) as Record<string, unknown>;
}
