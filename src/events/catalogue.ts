/**
 * The event catalogue: the single source of truth for every event kind bucketmeter accepts.
 * JSON schemas (schemas.ts), TypeScript types (below), the README's kind table and the per-kind
 * tests are all derived from these two tables. Field names are the wire names of the original hosted
 * service's clients (README "Event kinds"); how each is stored is declared once in src/store/row.ts.
 */

/** Value types a field can have on the wire. */
export type FieldType =
  | 'string' // UTF-8, at most MAX_STRING_BYTES bytes
  | 'bytes' // integer 0..MAX_EVENT_BYTES (16 TiB)
  | 'partNumber' // integer 1..10,000
  | 'boolean'
  | 'copySource' // { bucket, objectKey, versionId? }
  | 'deletedObjects'; // 1..1,000 of { objectKey, resultingDeleteMarkerVersionId?, hardDeletedVersionId? }

export const MAX_STRING_BYTES = 1024;
export const MAX_DELETED_OBJECTS = 1000;
export const MAX_PART_NUMBER = 10000;
/**
 * 16 TiB: above any provider's largest object (S3, GCS, R2 and Wasabi 5 TiB, B2 10 TB), so a larger
 * size is a client's bug. It keeps what one event adds to the derived sums within the stores' 64-bit
 * integers with room to spare: its bytes × the seconds left in its hour (the inventory's byte-seconds,
 * up to 3,600 ×) is at most 6.3 × 10^16. A size of 2^53 − 1 was accepted before and stopped the
 * inventory's catch-up for every tenant (its byte-seconds past 2^63).
 */
export const MAX_EVENT_BYTES = 2 ** 44;

/** Every kind-specific field, with its type and meaning. */
export const FIELDS = {
  bucket: { type: 'string', doc: 'bucket name (wire alias: bucketName)' },
  objectKey: { type: 'string', doc: 'object key' },
  versionId: { type: 'string', doc: 'object version id (versioned buckets)' },
  bytes: { type: 'bytes', doc: 'size in bytes' },
  isBillableEgress: { type: 'boolean', doc: 'outflow is charged; absent or null means true' },
  objectCategory: { type: 'string', doc: 'category of the object; when absent, the value of fileType' },
  fileType: { type: 'string', doc: "file type, the SDKs' field of its own (older wire drafts sent it for objectCategory)" },
  isSynthetic: { type: 'boolean', doc: "the SDKs' flag, kept as sent (the hosted service never said what it marks)" },
  copySource: { type: 'copySource', doc: 'source of a copy: {bucket, objectKey, versionId?}; other members kept' },
  resultingDeleteMarkerVersionId: { type: 'string', doc: 'version id of the delete marker (soft delete); SDK dialect: versionId with isDeleteMarker true' },
  hardDeletedVersionId: { type: 'string', doc: 'version id truly removed (hard delete); SDK dialect: versionId without isDeleteMarker' },
  deletedObjects: {
    type: 'deletedObjects',
    doc: '1..1,000 entries {objectKey, resultingDeleteMarkerVersionId?, hardDeletedVersionId?}; SDK dialect {objectKey, versionId?, isDeleteMarker?} mapped',
  },
  objectKeyPrefix: { type: 'string', doc: 'common key prefix' },
  uploadId: { type: 'string', doc: 'multipart upload id' },
  partNumber: { type: 'partNumber', doc: 'part number, 1..10,000' },
  force: { type: 'boolean', doc: 'forced delete: bucket emptied first (Wasabi)' },
} as const satisfies Record<string, { type: FieldType; doc: string }>;

export type FieldName = keyof typeof FIELDS;

/** Fields every kind carries. `eventId` is bucketmeter's own addition for exactly-once ingestion. */
export const COMMON_FIELDS = {
  action: { required: true, doc: 'event kind' },
  timestamp: { required: true, doc: 'ISO 8601; stored as UTC whole seconds' },
  provider: { required: true, doc: 'storage provider, a token [a-z0-9-]{1,32} (lowercased)' },
  customerId: { required: false, doc: 'customer that caused the event' },
  featureId: { required: false, doc: 'feature involved' },
  clientType: { required: false, doc: 'type of client or device' },
  clientId: { required: false, doc: 'client or device id' },
  eventId: { required: false, doc: '1-128 printable ASCII characters; exactly once per tenant' },
} as const;

export type CommonFieldName = keyof typeof COMMON_FIELDS;

interface KindSpec {
  /** Stable numeric code stored in the database. Never renumber; only append. */
  readonly code: number;
  readonly required: readonly FieldName[];
  readonly optional: readonly FieldName[];
  readonly doc: string;
}

const perBucket = (code: number, doc: string) =>
  ({ code, required: ['bucket'], optional: [], doc }) as const;
const perObject = (code: number, doc: string) =>
  ({ code, required: ['bucket', 'objectKey'], optional: ['versionId'], doc }) as const;
const listing = (code: number, doc: string) =>
  ({ code, required: ['bucket'], optional: ['objectKeyPrefix'], doc }) as const;

export const KINDS = {
  GetObject: {
    code: 1, required: ['bucket', 'objectKey', 'bytes'],
    optional: ['versionId', 'isBillableEgress'], doc: 'object downloaded',
  },
  PutObject: {
    code: 2, required: ['bucket', 'objectKey', 'bytes'],
    optional: ['versionId', 'objectCategory', 'fileType', 'isSynthetic'], doc: 'object uploaded',
  },
  PostObject: {
    code: 3, required: ['bucket', 'objectKey', 'bytes'],
    optional: ['versionId', 'objectCategory', 'fileType', 'isSynthetic'], doc: 'object uploaded by form POST',
  },
  CopyObject: {
    code: 4, required: ['bucket', 'objectKey'],
    optional: ['versionId', 'copySource'], doc: 'object copied (destination fields)',
  },
  DeleteObject: {
    code: 5, required: ['bucket', 'objectKey'],
    optional: ['resultingDeleteMarkerVersionId', 'hardDeletedVersionId'], doc: 'object deleted',
  },
  DeleteObjects: {
    code: 6, required: ['bucket', 'deletedObjects'],
    optional: ['objectKeyPrefix'], doc: 'several objects deleted in one call',
  },
  CreateMultipartUpload: {
    code: 7, required: ['bucket', 'objectKey', 'uploadId'],
    optional: [], doc: 'multipart upload started',
  },
  CompleteMultipartUpload: {
    code: 8, required: ['bucket', 'uploadId'],
    optional: ['objectKey', 'versionId'], doc: 'multipart upload completed',
  },
  AbortMultipartUpload: {
    code: 9, required: ['bucket', 'uploadId'],
    optional: ['objectKey'], doc: 'multipart upload aborted',
  },
  UploadPart: {
    code: 10, required: ['bucket', 'uploadId', 'partNumber', 'bytes'],
    optional: ['objectKey'], doc: 'part uploaded',
  },
  UploadPartCopy: {
    code: 11, required: ['bucket', 'uploadId', 'partNumber'],
    optional: ['copySource', 'bytes'], doc: 'part copied from an existing object',
  },
  ListParts: {
    code: 12, required: ['bucket', 'uploadId'],
    optional: [], doc: 'parts of an upload listed',
  },
  ListMultipartUploads: {
    code: 13, required: ['bucket'], optional: [], doc: 'uploads in progress listed',
  },
  ListBuckets: { code: 14, required: [], optional: [], doc: 'buckets listed' },
  DeleteBucket: {
    code: 15, required: ['bucket'], optional: ['force'], doc: 'bucket deleted',
  },
  HeadBucket: perBucket(16, 'bucket accessed'),
  CreateBucket: perBucket(17, 'bucket created'),
  GetBucketAcl: perBucket(18, 'bucket ACL retrieved'),
  GetBucketCors: perBucket(19, 'bucket CORS configuration retrieved'),
  GetBucketEncryption: perBucket(20, 'bucket encryption settings retrieved'),
  GetBucketLocation: perBucket(21, 'bucket location retrieved'),
  GetBucketVersioning: perBucket(22, 'bucket versioning retrieved'),
  PutBucketAcl: perBucket(23, 'bucket ACL set'),
  PutBucketCors: perBucket(24, 'bucket CORS configuration set'),
  PutBucketEncryption: perBucket(25, 'bucket encryption settings set'),
  DeleteBucketCors: perBucket(26, 'bucket CORS configuration deleted'),
  DeleteBucketEncryption: perBucket(27, 'bucket encryption settings deleted'),
  GetObjectLockConfiguration: perBucket(28, 'object-lock configuration retrieved'),
  PutObjectLockConfiguration: perBucket(29, 'object-lock configuration set'),
  ListObjectsV2: listing(30, 'objects listed'),
  ListObjectVersions: {
    code: 31, required: ['bucket'], optional: ['objectKeyPrefix', 'objectKey'], doc: 'object versions listed',
  },
  HeadObject: perObject(32, 'object accessed'),
  GetObjectAcl: perObject(33, 'object ACL retrieved'),
  PutObjectAcl: perObject(34, 'object ACL set'),
  GetObjectRetention: perObject(35, 'object retention retrieved'),
  PutObjectRetention: perObject(36, 'object retention set'),
  GetObjectLegalHold: perObject(37, 'object legal hold retrieved'),
  PutObjectLegalHold: perObject(38, 'object legal hold set'),
  ListObjects: listing(39, 'objects listed (older API, not in spec 2.2)'),
} as const satisfies Record<string, KindSpec>;

export type ActionName = keyof typeof KINDS;

export const ACTION_NAMES = Object.keys(KINDS) as ActionName[];

const byCode = new Map<number, ActionName>(ACTION_NAMES.map((name) => [KINDS[name].code, name]));

export function isActionName(value: unknown): value is ActionName {
  return typeof value === 'string' && Object.hasOwn(KINDS, value);
}

export function actionByCode(code: number): ActionName | undefined {
  return byCode.get(code);
}

/** Wire aliases accepted and renamed during normalization; both names with different values are refused. */
export const FIELD_ALIASES = { bucketName: 'bucket' } as const satisfies Record<string, FieldName>;

/**
 * A field left absent takes the value of another field of the same event, which is kept as well:
 * older wire drafts sent fileType for objectCategory, and the SDKs send both as independent fields.
 */
export const FIELD_FALLBACKS = { objectCategory: 'fileType' } as const satisfies { [F in FieldName]?: FieldName };

/**
 * The SDKs' dialect (shared/spec/wire-format.md, "The second dialect") names a deleted version with
 * `versionId` and `isDeleteMarker` instead of the two version fields, on DeleteObject and on each
 * deletedObjects entry. `isDeleteMarker: true` maps `versionId` onto `resultingDeleteMarkerVersionId`
 * (the delete marker the delete created); otherwise onto `hardDeletedVersionId` (the version removed).
 * A pair that cannot be mapped (no versionId, or the target field already holds another id) is kept
 * as sent, like any unknown member: never refused.
 */
export const DELETED_VERSION_DIALECT = {
  kinds: ['DeleteObject'],
  versionId: 'versionId',
  flag: 'isDeleteMarker',
  whenFlagged: 'resultingDeleteMarkerVersionId',
  otherwise: 'hardDeletedVersionId',
} as const satisfies { kinds: readonly ActionName[]; whenFlagged: FieldName; otherwise: FieldName; versionId: string; flag: string };

/**
 * Members only the SDKs send (beyond the mappings above), and what they are kept as. With the two
 * declarations above, the README's dialect table is rendered from these.
 */
export const SDK_MEMBERS = [
  { member: 'isSynthetic', kinds: ['PutObject', 'PostObject'], keptAs: 'as sent (the hosted service never said what it marks)' },
  {
    member: 'objectKey',
    kinds: ['ListObjectVersions'],
    keptAs: 'the key whose versions were listed (the Java collector sends a prefix instead, kept as objectKeyPrefix)',
  },
] as const satisfies readonly { member: FieldName; kinds: readonly ActionName[]; keptAs: string }[];

/**
 * The Java collector sends an operation it could not map as `action: "Unknown"` (with `classNames`).
 * Such an event is refused like any unknown kind, but quarantined under a code of its own.
 */
export const UNMAPPED_ACTION = 'Unknown';

/** Values a field takes when the client leaves it absent (or sends null or ""). */
export const FIELD_DEFAULTS = { isBillableEgress: true } as const satisfies { [F in FieldName]?: FieldValue<F> };

/** Server-assigned event ids start with this prefix; client eventIds may not (validate.ts). */
export const SERVER_EVENT_ID_PREFIX = 'bm-';

/** Names set by the server on output; a client may not send them. */
export const RESERVED_FIELDS = ['receivedAt'] as const;

// ---- Types derived from the catalogue ----

/** Members the client sent beyond these are kept as sent (bounded like unknown top-level fields). */
export interface CopySource {
  bucket: string;
  objectKey: string;
  versionId?: string;
}

/** Like CopySource, keeps unknown members; the SDK dialect's versionId/isDeleteMarker are mapped first. */
export interface DeletedObject {
  objectKey: string;
  resultingDeleteMarkerVersionId?: string;
  hardDeletedVersionId?: string;
}

interface FieldTypeMap {
  string: string;
  bytes: number;
  partNumber: number;
  boolean: boolean;
  copySource: CopySource;
  deletedObjects: DeletedObject[];
}

export type FieldValue<F extends FieldName> = FieldTypeMap[(typeof FIELDS)[F]['type']];

type RequiredOf<K extends ActionName> = (typeof KINDS)[K]['required'][number];
type OptionalOf<K extends ActionName> = (typeof KINDS)[K]['optional'][number];

/** The common fields a client may leave out. */
type OptionalCommonField = {
  [C in CommonFieldName]: (typeof COMMON_FIELDS)[C]['required'] extends true ? never : C;
}[CommonFieldName];

/** What every normalized event carries, whatever its kind. */
type CommonValues<A extends ActionName> = {
  action: A;
  /** Epoch seconds. */
  timestamp: number;
  provider: string;
  /** Unknown top-level fields the client sent, kept as they came. */
  extra?: Record<string, unknown>;
} & { [C in OptionalCommonField]?: string };

/** A normalized event of kind K: aliases resolved, absent optionals omitted, timestamp in epoch seconds. */
export type EventOf<K extends ActionName> = CommonValues<K> & { [F in RequiredOf<K>]: FieldValue<F> } & {
  [F in OptionalOf<K>]?: FieldValue<F>;
};

/** Any normalized event: the union over all kinds. */
export type NormalizedEvent = { [K in ActionName]: EventOf<K> }[ActionName];

/** The loose shape every normalized event fits (any kind, every field optional); what stores read and write. */
export type EventRecord = CommonValues<ActionName> & { [F in FieldName]?: FieldValue<F> };
