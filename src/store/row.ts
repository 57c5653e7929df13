/**
 * How an event is laid out in a store row, declared once for every backend: each stored field's
 * storage class and column. The fields that usage queries filter and sum get typed columns
 * (dictionary-encoded where the values repeat); rare kind-specific fields and the client's unknown
 * extra fields share one JSON text column. Both backends derive their column lists, offsets,
 * encoders and decoders from STORED_FIELDS, so a field left out of it, or given a class its value
 * cannot have, does not compile.
 */
import type { EventRecord } from '../events/catalogue.js';

/** Every field of an event but the fixed ones (action, timestamp: columns of their own) and `extra`. */
export type StoredFieldName = Exclude<keyof EventRecord, 'action' | 'timestamp' | 'extra'>;

/** The storage classes a field of this value type may have. */
type StorageFor<V> = [V] extends [string]
  ? /** Low-cardinality strings: ids into the dictionary table. */
    | { storage: 'dict'; column: string; pgColumn?: string }
    /** High-cardinality strings, stored inline. */
    | { storage: 'text'; column: string }
    | { storage: 'json' }
  : [V] extends [number]
    ? { storage: 'int'; column: string; pgType: 'bigint' | 'smallint' } | { storage: 'json' }
    : [V] extends [boolean]
      ? { storage: 'bool'; column: string; pgColumn?: string } | { storage: 'json' }
      : /** Objects and lists: under their own names in the JSON column. */
        { storage: 'json' };

type StoredFieldSpec = { [F in StoredFieldName]: StorageFor<NonNullable<EventRecord[F]>> };

/**
 * `column` is the SQLite column; PostgreSQL's is `pgColumn`, by default `<column>_id` for a
 * dictionary field and `column` otherwise. A new column also needs a migration in each backend.
 */
export const STORED_FIELDS = {
  provider: { storage: 'dict', column: 'provider' },
  customerId: { storage: 'dict', column: 'customer' },
  featureId: { storage: 'dict', column: 'feature' },
  clientType: { storage: 'dict', column: 'client_type' },
  clientId: { storage: 'dict', column: 'client_id', pgColumn: 'client_id' },
  bucket: { storage: 'dict', column: 'bucket' },
  objectCategory: { storage: 'dict', column: 'object_category' },
  // SQLite stores an object_keys id in this column (object-keys.ts).
  objectKey: { storage: 'text', column: 'object_key' },
  versionId: { storage: 'text', column: 'version_id' },
  uploadId: { storage: 'text', column: 'upload_id' },
  // The client's id, usually absent: the row's seq then makes the server id.
  eventId: { storage: 'text', column: 'event_id' },
  bytes: { storage: 'int', column: 'bytes', pgType: 'bigint' },
  partNumber: { storage: 'int', column: 'part_number', pgType: 'smallint' },
  isBillableEgress: { storage: 'bool', column: 'billable', pgColumn: 'is_billable_egress' },
  copySource: { storage: 'json' },
  resultingDeleteMarkerVersionId: { storage: 'json' },
  hardDeletedVersionId: { storage: 'json' },
  deletedObjects: { storage: 'json' },
  objectKeyPrefix: { storage: 'json' },
  force: { storage: 'json' },
  fileType: { storage: 'json' },
  isSynthetic: { storage: 'json' },
} as const satisfies StoredFieldSpec;

type Storage = (typeof STORED_FIELDS)[StoredFieldName]['storage'];
type FieldsOf<S extends Storage> = {
  [F in StoredFieldName]: (typeof STORED_FIELDS)[F]['storage'] extends S ? F : never;
}[StoredFieldName];

export type DictField = FieldsOf<'dict'>;
export type TextField = FieldsOf<'text'>;
export type IntField = FieldsOf<'int'>;
export type BoolField = FieldsOf<'bool'>;
export type JsonField = FieldsOf<'json'>;
export type ColumnField = Exclude<StoredFieldName, JsonField>;

const NAMES = Object.keys(STORED_FIELDS) as StoredFieldName[];
const fieldsOf = <S extends Storage>(storage: S): readonly FieldsOf<S>[] =>
  NAMES.filter((name) => STORED_FIELDS[name].storage === storage) as FieldsOf<S>[];

export const DICT_FIELDS = fieldsOf('dict');
export const TEXT_FIELDS = fieldsOf('text');
export const INT_FIELDS = fieldsOf('int');
export const BOOL_FIELDS = fieldsOf('bool');
export const JSON_FIELDS = fieldsOf('json');

/** The fields with a column of their own, in the order every backend lays them out: by class, then declaration. */
export const COLUMN_FIELDS: readonly ColumnField[] = [...DICT_FIELDS, ...TEXT_FIELDS, ...INT_FIELDS, ...BOOL_FIELDS];

export function sqliteColumn(field: ColumnField): string {
  return STORED_FIELDS[field].column;
}

export function pgColumn(field: ColumnField): string {
  const spec: { storage: string; column: string; pgColumn?: string } = STORED_FIELDS[field];
  return spec.pgColumn ?? (spec.storage === 'dict' ? `${spec.column}_id` : spec.column);
}

export function pgType(field: ColumnField): string {
  const spec = STORED_FIELDS[field];
  switch (spec.storage) {
    case 'dict':
      return 'integer';
    case 'text':
      return 'text';
    case 'int':
      return spec.pgType;
    case 'bool':
      return 'boolean';
  }
}

/**
 * The JSON column's content: known non-column fields at top level, unknown client fields under `x`.
 * Returns null when there is nothing to keep (the common case), so most rows carry no JSON at all.
 */
export function encodeRest(event: EventRecord): string | null {
  let rest: Record<string, unknown> | undefined;
  for (const name of JSON_FIELDS) {
    const value = event[name];
    if (value === undefined) continue;
    rest ??= {};
    rest[name] = value;
  }
  if (event.extra !== undefined && Object.keys(event.extra).length > 0) {
    rest ??= {};
    rest.x = event.extra;
  }
  return rest === undefined ? null : JSON.stringify(rest);
}

/** Puts the JSON column's content back onto an event being read. */
export function decodeRest(json: string | null, into: EventRecord): void {
  if (json === null) return;
  const rest = JSON.parse(json) as Record<string, unknown>;
  for (const name of JSON_FIELDS) {
    if (rest[name] !== undefined) (into as Record<string, unknown>)[name] = rest[name];
  }
  if (rest.x !== undefined) into.extra = rest.x as Record<string, unknown>;
}

/** A boolean column's value as SQLite stores it (1/0; null when absent). */
export function encodeBool(value: boolean | undefined): number | null {
  return value === undefined ? null : value ? 1 : 0;
}
