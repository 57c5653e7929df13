/**
 * What each S3 command becomes: its event kind and, field by field, where the value comes from.
 * Each source carries its own description, so the README's per-command table is generated from
 * this file (scripts/gen-fields.ts) and cannot drift from what the code does.
 */
import { parseCopySource, rangeLength } from './copy-source.js';
import type { DeletedObject } from '../types.js';

/** Everything known about one completed call. */
export interface CallData {
  input: Record<string, any>;
  output: Record<string, any>;
  /** A header of the request as sent, after the SDK's own middleware, by its lower-case name. */
  requestHeader(lowerName: string): string | undefined;
}

export interface Source {
  /** Where the value comes from, for the README. */
  doc: string;
  get(call: CallData): unknown;
}

export interface CommandSpec {
  fields: Record<string, Source>;
  /** When the call emits no event although it succeeded, and why. */
  skip?: { doc: string; when(call: CallData): boolean };
}

const present = (v: unknown) => (v === undefined || v === null || v === '' ? undefined : v);

const input = (name: string): Source => ({ doc: `input.${name}`, get: (c) => present(c.input[name]) });
const output = (name: string): Source => ({ doc: `output.${name}`, get: (c) => present(c.output[name]) });
const firstOf = (...sources: Source[]): Source => ({
  doc: sources.map((s) => s.doc).join(', else '),
  get: (c) => {
    for (const s of sources) {
      const v = s.get(c);
      if (v !== undefined) return v;
    }
    return undefined;
  },
});
const header = (name: string): Source => ({
  doc: `request header ${name}`,
  get: (c) => {
    const v = c.requestHeader(name);
    return v === undefined || !/^\d+$/.test(v) ? undefined : Number(v);
  },
});

const bucket = input('Bucket');
const key = input('Key');
/** Bytes of an upload as the SDK sent them: aws-chunked streams announce the decoded length. */
const uploadBytes = firstOf(header('x-amz-decoded-content-length'), header('content-length'), input('ContentLength'));
const copySource: Source = {
  doc: 'input.CopySource parsed ("bucket/key?versionId=", URL-decoded; access-point ARNs too), versionId from output.CopySourceVersionId when S3 gives it',
  get: (c) => {
    const source = parseCopySource(c.input.CopySource);
    const answered = present(c.output.CopySourceVersionId);
    if (source !== undefined && typeof answered === 'string') source.versionId = answered;
    return source;
  },
};

const perBucket: CommandSpec = { fields: { bucket } };
const perObject: CommandSpec = { fields: { bucket, objectKey: key, versionId: input('VersionId') } };
const listing: CommandSpec = { fields: { bucket, objectKeyPrefix: input('Prefix') } };

/** Longest common prefix, character by character (not by "/" segments). */
function commonPrefix(keys: string[]): string {
  if (keys.length === 0) return '';
  let prefix = keys[0]!;
  for (const k of keys) while (!k.startsWith(prefix)) prefix = prefix.slice(0, -1);
  return prefix;
}

interface S3Deleted { Key?: string; VersionId?: string; DeleteMarker?: boolean; DeleteMarkerVersionId?: string }
interface S3ObjectId { Key?: string; VersionId?: string }

/**
 * The objects S3 says it deleted. In Quiet mode S3 lists only failures, so the deleted ones are the
 * requested ones minus output.Errors.
 */
function deletedObjects(c: CallData): DeletedObject[] {
  const requested: S3ObjectId[] = c.input.Delete?.Objects ?? [];
  let deleted: S3Deleted[] = c.output.Deleted ?? [];
  if (c.input.Delete?.Quiet === true && c.output.Deleted === undefined) {
    const failed = new Set((c.output.Errors ?? []).map((e: S3ObjectId) => `${e.Key}\0${e.VersionId ?? ''}`));
    deleted = requested.filter((o) => !failed.has(`${o.Key}\0${o.VersionId ?? ''}`));
  }
  return deleted
    .filter((d) => typeof d.Key === 'string')
    .map((d) => {
      if (present(d.VersionId) !== undefined) return { objectKey: d.Key!, hardDeletedVersionId: d.VersionId! };
      if (present(d.DeleteMarkerVersionId) !== undefined) return { objectKey: d.Key!, resultingDeleteMarkerVersionId: d.DeleteMarkerVersionId! };
      return { objectKey: d.Key! };
    });
}

/** Keyed by event kind; the SDK command is the kind + "Command". */
export const COMMANDS: Record<string, CommandSpec> = {
  GetObject: {
    fields: {
      bucket,
      objectKey: key,
      versionId: firstOf(output('VersionId'), input('VersionId')),
      bytes: { doc: 'output.ContentLength (a ranged GET counts the range)', get: (c) => c.output.ContentLength },
    },
  },
  PutObject: { fields: { bucket, objectKey: key, versionId: output('VersionId'), bytes: uploadBytes } },
  CopyObject: { fields: { bucket, objectKey: key, versionId: output('VersionId'), copySource } },
  DeleteObject: {
    fields: {
      bucket,
      objectKey: key,
      hardDeletedVersionId: input('VersionId'),
      resultingDeleteMarkerVersionId: {
        doc: 'output.VersionId when output.DeleteMarker and no input.VersionId (a delete marker was created)',
        get: (c) => (present(c.input.VersionId) === undefined && c.output.DeleteMarker === true ? present(c.output.VersionId) : undefined),
      },
    },
  },
  DeleteObjects: {
    fields: {
      bucket,
      objectKeyPrefix: { doc: 'longest common prefix of input.Delete.Objects[].Key', get: (c) => present(commonPrefix((c.input.Delete?.Objects ?? []).map((o: S3ObjectId) => o.Key ?? ''))) },
      deletedObjects: {
        doc: 'output.Deleted[]: {Key, VersionId → hardDeletedVersionId, else DeleteMarkerVersionId → resultingDeleteMarkerVersionId}; output.Errors[] left out; Quiet: input.Delete.Objects minus output.Errors',
        get: deletedObjects,
      },
    },
    skip: { doc: 'no event when S3 deleted nothing (every key in output.Errors)', when: (c) => deletedObjects(c).length === 0 },
  },
  CreateMultipartUpload: { fields: { bucket, objectKey: key, uploadId: output('UploadId') } },
  CompleteMultipartUpload: { fields: { bucket, objectKey: key, uploadId: input('UploadId'), versionId: output('VersionId') } },
  AbortMultipartUpload: { fields: { bucket, objectKey: key, uploadId: input('UploadId') } },
  UploadPart: { fields: { bucket, objectKey: key, uploadId: input('UploadId'), partNumber: input('PartNumber'), bytes: uploadBytes } },
  UploadPartCopy: {
    fields: {
      bucket,
      uploadId: input('UploadId'),
      partNumber: input('PartNumber'),
      copySource,
      bytes: { doc: 'length of input.CopySourceRange, when given', get: (c) => rangeLength(c.input.CopySourceRange) },
    },
  },
  ListParts: { fields: { bucket, uploadId: input('UploadId') } },
  ListMultipartUploads: perBucket,
  ListBuckets: { fields: {} },
  DeleteBucket: perBucket,
  HeadBucket: perBucket,
  CreateBucket: perBucket,
  GetBucketAcl: perBucket,
  GetBucketCors: perBucket,
  GetBucketEncryption: perBucket,
  GetBucketLocation: perBucket,
  GetBucketVersioning: perBucket,
  PutBucketAcl: perBucket,
  PutBucketCors: perBucket,
  PutBucketEncryption: perBucket,
  DeleteBucketCors: perBucket,
  DeleteBucketEncryption: perBucket,
  GetObjectLockConfiguration: perBucket,
  PutObjectLockConfiguration: perBucket,
  ListObjectsV2: listing,
  ListObjectVersions: listing,
  HeadObject: { fields: { bucket, objectKey: key, versionId: firstOf(output('VersionId'), input('VersionId')) } },
  GetObjectAcl: perObject,
  PutObjectAcl: perObject,
  GetObjectRetention: perObject,
  PutObjectRetention: perObject,
  GetObjectLegalHold: perObject,
  PutObjectLegalHold: perObject,
  ListObjects: listing,
};

/** The kinds no S3Client command produces. */
export const NOT_FROM_SDK: Record<string, string> = {
  PostObject: 'a browser form upload (createPresignedPost) never passes through the S3Client: send it with meter.track()',
};

/** The event fields of one call; undefined when the command emits nothing. */
export function extractFields(action: string, call: CallData): Record<string, unknown> | undefined {
  const spec = COMMANDS[action];
  if (spec === undefined || spec.skip?.when(call) === true) return undefined;
  const fields: Record<string, unknown> = {};
  for (const name in spec.fields) {
    const value = spec.fields[name]!.get(call);
    if (value !== undefined) fields[name] = value;
  }
  return fields;
}
