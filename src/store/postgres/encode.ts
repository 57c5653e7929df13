/**
 * How a commit unit reaches PostgreSQL: the commit statement (one statement per unit, its own
 * transaction) and the encoding of the unit's events into its array parameters.
 */
import { KINDS, type EventRecord } from '../../events/catalogue.js';
import { DICT_FIELDS, encodeBool, encodeRest, type DictField } from '../row.js';

// ---- Text columns ----

const ESCAPE_MARK = '\u0001';
/** U+0000 anywhere, or a UTF-16 surrogate without its partner. */
const NOT_PG_TEXT = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * PostgreSQL text cannot hold U+0000 (the whole unit would fail, again on every retry) and would turn
 * an unpaired surrogate into U+FFFD; such strings, and those starting with the mark, are stored as
 * the mark followed by their JSON encoding, which represents both exactly.
 */
export function toPgText(value: string): string {
  return value.charCodeAt(0) === 1 || NOT_PG_TEXT.test(value) ? ESCAPE_MARK + JSON.stringify(value) : value;
}

export function fromPgText(value: string): string {
  return value.charCodeAt(0) === 1 ? (JSON.parse(value.slice(1)) as string) : value;
}

// ---- The commit statement ----

/** The columns of one input row of the commit statement; `ord` is the event's index in the unit. */
export const INPUT_COLUMNS = [
  ['ord', 'integer'],
  ['tenant_id', 'integer'],
  ['event_id', 'text'],
  ['ts', 'bigint'],
  ['received_at', 'bigint'],
  ['bytes', 'bigint'],
  ['provider_id', 'integer'],
  ['customer_id', 'integer'],
  ['feature_id', 'integer'],
  ['client_type_id', 'integer'],
  ['client_id', 'integer'],
  ['bucket_id', 'integer'],
  ['object_category_id', 'integer'],
  ['action', 'smallint'],
  ['part_number', 'smallint'],
  ['is_billable_egress', 'boolean'],
  ['object_key', 'text'],
  ['version_id', 'text'],
  ['upload_id', 'text'],
  ['rest', 'text'],
] as const;

export type InputColumn = (typeof INPUT_COLUMNS)[number][0];

const STORED_COLUMNS = INPUT_COLUMNS.map(([name]) => name).filter((name) => name !== 'ord');
const DICT_COLUMN: Record<DictField, InputColumn> = {
  provider: 'provider_id',
  customerId: 'customer_id',
  featureId: 'feature_id',
  clientType: 'client_type_id',
  clientId: 'client_id',
  bucket: 'bucket_id',
  objectCategory: 'object_category_id',
};

/** The sequence's INCREMENT BY (migration 1): each nextval() reserves this many ids. */
const SEQ_BLOCK = 1000;

/** Parameters $1..$10 of the commit statement: quarantine rows and replay marks. */
export const QUARANTINE_PARAMS = 10;

/**
 * The commit statement, reading the unit's events from `input` (a FROM item with the
 * INPUT_COLUMNS, aliased i). Returns (ord, seq) of the events stored; the others were duplicates.
 */
export function commitSql(input: string): string {
  const stored = STORED_COLUMNS.join(', ');
  return `WITH input AS MATERIALIZED (SELECT * FROM ${input}),
ids AS (
  INSERT INTO event_ids (tenant_id, event_id)
  SELECT tenant_id, event_id FROM input WHERE event_id IS NOT NULL
  -- One global lock order, so two units sharing eventIds cannot deadlock.
  ORDER BY tenant_id, event_id COLLATE "C"
  ON CONFLICT DO NOTHING
  RETURNING tenant_id, event_id
),
fresh AS (
  SELECT i.*, row_number() OVER (ORDER BY i.ord) AS n FROM input i
  WHERE i.event_id IS NULL
     OR EXISTS (SELECT 1 FROM ids WHERE ids.tenant_id = i.tenant_id AND ids.event_id = i.event_id COLLATE "C")
),
-- Blocks of sequence values, used in unit order, so arrival order holds within a unit too.
seqs AS MATERIALIZED (
  SELECT nextval('event_seq') AS base FROM generate_series(1, ((SELECT count(*) FROM fresh) + ${SEQ_BLOCK - 1}) / ${SEQ_BLOCK})
),
kept AS MATERIALIZED (
  SELECT f.*, b.base + (f.n - 1) % ${SEQ_BLOCK} AS seq
  FROM fresh f JOIN (SELECT base, row_number() OVER (ORDER BY base) - 1 AS block FROM seqs) b ON b.block = (f.n - 1) / ${SEQ_BLOCK}
),
-- In seq order: the (tenant_id, seq) index then only ever grows at its right edge, and its pages stay full.
stored AS (INSERT INTO events (seq, ${stored}) SELECT seq, ${stored} FROM kept ORDER BY seq),
quarantined AS (
  INSERT INTO quarantine (tenant_id, received_at, idx, truncated, code, errors, source, body)
  SELECT * FROM unnest($1::integer[], $2::bigint[], $3::integer[], $4::boolean[], $5::text[], $6::text[], $7::text[], $8::bytea[])
),
-- The first replay's time is kept.
replayed AS (UPDATE quarantine SET replayed_at = $10 WHERE id = ANY($9::bigint[]) AND replayed_at IS NULL)
SELECT ord, seq FROM kept`;
}

/** The FROM item of the store's own commit statement: one array parameter per input column. */
export const UNNEST_INPUT = `unnest(${INPUT_COLUMNS.map(([, type], i) => `$${QUARANTINE_PARAMS + i + 1}::${type}[]`).join(', ')}) AS i(${INPUT_COLUMNS.map(([name]) => name).join(', ')})`;
export const COMMIT_SQL = commitSql(UNNEST_INPUT);

const QUOTE_ESCAPE = /["\\]/;
const QUOTE_ESCAPE_ALL = /["\\]/g;

/** An element of a PostgreSQL array literal holding text: always quoted, so no value reads as NULL. */
function quoted(value: string): string {
  return '"' + (QUOTE_ESCAPE.test(value) ? value.replace(QUOTE_ESCAPE_ALL, '\\$&') : value) + '"';
}

const textOrNull = (value: string | undefined): string => (value === undefined ? 'NULL' : quoted(toPgText(value)));

const C = Object.fromEntries(INPUT_COLUMNS.map(([name], i) => [name, i])) as Record<InputColumn, number>;
const DICT_COLUMN_INDEX = DICT_FIELDS.map((field) => C[DICT_COLUMN[field]]);

/**
 * A unit's events as the commit statement's column parameters: one array literal per INPUT_COLUMNS
 * entry, written here rather than handed to node-postgres as JS arrays, whose generic per-element
 * escaping cost more than the rest of the encoding. One pass per event: dictionary fields get a
 * unit-local index as their values are met (`values`), and the ids found for those values are
 * written in by `finish`, so each distinct value is looked up once per unit.
 */
export class UnitEncoder {
  /** The unit's distinct dictionary values, as events hold them, in order of first use. */
  readonly values: string[] = [];
  #rows = 0;
  readonly #index = new Map<string, number>();
  readonly #columns = INPUT_COLUMNS.map(() => [] as (string | number)[]);
  /** Per row, DICT_FIELDS as indexes into `values`; -1 for absent. */
  readonly #dict: Int32Array;

  constructor(capacity: number) {
    this.#dict = new Int32Array(capacity * DICT_FIELDS.length);
  }

  get rows(): number {
    return this.#rows;
  }

  /** Adds an event as the next row; `ord` is its index in the unit. */
  add(ord: number, tenantId: number, receivedAt: number, event: EventRecord): void {
    const columns = this.#columns;
    const row = this.#rows++;
    columns[C.ord]![row] = ord;
    columns[C.tenant_id]![row] = tenantId;
    columns[C.event_id]![row] = textOrNull(event.eventId);
    columns[C.ts]![row] = event.timestamp;
    columns[C.received_at]![row] = receivedAt;
    columns[C.bytes]![row] = event.bytes ?? 'NULL';
    const d = row * DICT_FIELDS.length;
    for (let f = 0; f < DICT_FIELDS.length; f++) {
      const value = event[DICT_FIELDS[f]!];
      let index = -1;
      if (value !== undefined) {
        index = this.#index.get(value) ?? -1;
        if (index === -1) {
          index = this.values.push(value) - 1;
          this.#index.set(value, index);
        }
      }
      this.#dict[d + f] = index;
    }
    columns[C.action]![row] = KINDS[event.action].code;
    columns[C.part_number]![row] = event.partNumber ?? 'NULL';
    const billable = encodeBool(event.isBillableEgress);
    columns[C.is_billable_egress]![row] = billable === null ? 'NULL' : billable === 1 ? 't' : 'f';
    columns[C.object_key]![row] = textOrNull(event.objectKey);
    columns[C.version_id]![row] = textOrNull(event.versionId);
    columns[C.upload_id]![row] = textOrNull(event.uploadId);
    // JSON.stringify escapes NUL and lone surrogates, so the JSON is valid PostgreSQL text as it is.
    const rest = encodeRest(event);
    columns[C.rest]![row] = rest === null ? 'NULL' : quoted(rest);
  }

  /** The column literals, given the dictionary id of each of `values`, in the same order. */
  finish(ids: readonly number[]): string[] {
    for (let f = 0; f < DICT_FIELDS.length; f++) {
      const column = this.#columns[DICT_COLUMN_INDEX[f]!]!;
      for (let row = 0; row < this.#rows; row++) {
        const index = this.#dict[row * DICT_FIELDS.length + f]!;
        column[row] = index === -1 ? 'NULL' : ids[index]!;
      }
    }
    return this.#columns.map((column) => '{' + column.join(',') + '}');
  }
}
