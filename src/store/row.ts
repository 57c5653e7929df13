/**
 * How an event is laid out in a store row, shared by every backend: the fields that usage queries
 * filter and sum get typed columns (dictionary-encoded where the values repeat), everything else
 * (rare kind-specific fields and the client's unknown extra fields) goes into one JSON text column.
 */
import type { EventRecord } from '../events/catalogue.js';

/** Low-cardinality strings, stored as ids into the dictionary table. */
export const DICT_FIELDS = ['provider', 'customerId', 'featureId', 'clientType', 'clientId', 'bucket', 'objectCategory'] as const;
/** Strings stored inline (high cardinality). */
export const TEXT_FIELDS = ['objectKey', 'versionId', 'uploadId'] as const;
/** Integers stored inline. */
export const INT_FIELDS = ['bytes', 'partNumber'] as const;

export type DictField = (typeof DICT_FIELDS)[number];
export type TextField = (typeof TEXT_FIELDS)[number];
export type IntField = (typeof INT_FIELDS)[number];

/** Kind-specific fields kept in the JSON column, under their own names. */
const JSON_FIELDS = [
  'copySource',
  'resultingDeleteMarkerVersionId',
  'hardDeletedVersionId',
  'deletedObjects',
  'objectKeyPrefix',
  'force',
  'fileType',
  'isSynthetic',
] as const;

/**
 * The JSON column's content: known non-column fields at top level, unknown client fields under `x`.
 * Returns null when there is nothing to keep (the common case), so most rows carry no JSON at all.
 */
export function encodeRest(event: EventRecord): string | null {
  let rest: Record<string, unknown> | undefined;
  for (const name of JSON_FIELDS) {
    const value = event[name];
    if (value !== undefined) (rest ??= {})[name] = value;
  }
  if (event.extra !== undefined && Object.keys(event.extra).length > 0) (rest ??= {}).x = event.extra;
  return rest === undefined ? null : JSON.stringify(rest);
}

/** Puts the JSON column's content back onto an event being read. */
export function decodeRest(json: string | null, into: EventRecord): void {
  if (json === null) return;
  const rest = JSON.parse(json) as Record<string, unknown>;
  for (const name of JSON_FIELDS) {
    if (rest[name] !== undefined) (into as unknown as Record<string, unknown>)[name] = rest[name];
  }
  if (rest.x !== undefined) into.extra = rest.x as Record<string, unknown>;
}

/** `isBillableEgress` as stored: 1/0 for GetObject (absent already normalized to true), null otherwise. */
export function encodeBool(value: boolean | undefined): number | null {
  return value === undefined ? null : value ? 1 : 0;
}
