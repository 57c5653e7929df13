/**
 * How a commit unit reaches PostgreSQL, in one transaction either way:
 *
 * - small units: one statement (data-modifying CTEs fed by one unnest() array per column), which is
 *   its own transaction: one round trip, where the COPY path takes five.
 * - large units: a first statement records the client eventIds in event_ids (those already there are
 *   duplicates), reserves sequence numbers and writes the quarantine entries; then the new events go
 *   into `events` by COPY; then COMMIT. COPY is how PostgreSQL takes rows most cheaply: on the bench
 *   machine it costs half the CPU per event of the one-statement path.
 *
 * docs/BENCHMARKS.md gives the figures of both.
 */
import { inventoryOutboxCte } from './inventory-sql.js';
import { KINDS } from '../../events/catalogue.js';
import type { EventRecord } from '../../events/catalogue.js';
import { BOOL_FIELDS, COLUMN_FIELDS, DICT_FIELDS, INT_FIELDS, TEXT_FIELDS, encodeRest, pgColumn, pgType } from '../row.js';
import type { CommitUnit, EventToStore } from '../types.js';
import { receiptsCte, usageOutboxCte } from './usage-sql.js';

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

// ---- Columns ----

/** The `events` columns after seq, in the order both paths send them: the fixed ones, row.ts's COLUMN_FIELDS, rest. */
const EVENT_COLUMNS: readonly (readonly [string, string])[] = [
  ['ts', 'bigint'],
  ['received_at', 'bigint'],
  ['tenant_id', 'integer'],
  ['action', 'smallint'],
  ...COLUMN_FIELDS.map((field) => [pgColumn(field), pgType(field)] as const),
  ['rest', 'text'],
];
const FIXED_COLUMNS = 4;

type Value = string | number | boolean | null;

/** The sequence's INCREMENT BY (migration 1): each nextval() reserves this many ids. */
export const SEQ_BLOCK = 1000;

/** Both paths' parameters $1-$8 (the quarantine entries' columns) and $9, $10 (the replay marks). */
const QUARANTINE_CTES = `quarantined AS (
  INSERT INTO quarantine (tenant_id, received_at, idx, truncated, code, errors, source, body)
  SELECT * FROM unnest($1::integer[], $2::bigint[], $3::integer[], $4::boolean[], $5::text[], $6::text[], $7::text[], $8::bytea[])
),
-- The first replay's time is kept.
replayed AS (UPDATE quarantine SET replayed_at = $10 WHERE id = ANY($9::bigint[]) AND replayed_at IS NULL)`;

// ---- Small units: one statement ----

/** The one statement's input columns: the event's row in the encoder, then EVENT_COLUMNS. */
const INPUT_COLUMNS: readonly (readonly [string, string])[] = [['row', 'integer'], ...EVENT_COLUMNS];

/**
 * The one statement, reading the unit's events from one array parameter per input column ($11 on),
 * as UnitEncoder.arrays writes them. Parameters $1-$10 as QUARANTINE_CTES says. Returns (row, seq)
 * of the events stored; the others were duplicates.
 */
/** With usage, the unit's receipts (receiptArrays) follow the input columns. */
const RECEIPT_PARAM = 11 + INPUT_COLUMNS.length;

function statementSql(usage: boolean, inventory: boolean): string {
  const input = `unnest(${INPUT_COLUMNS.map(([, type], i) => `$${11 + i}::${type}[]`).join(', ')}) AS i(${INPUT_COLUMNS.map(([name]) => name).join(', ')})`;
  const stored = EVENT_COLUMNS.map(([name]) => name).join(', ');
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
  SELECT i.*, row_number() OVER (PARTITION BY i.tenant_id ORDER BY i.row) AS n FROM input i
  WHERE i.event_id IS NULL
     OR EXISTS (SELECT 1 FROM ids WHERE ids.tenant_id = i.tenant_id AND ids.event_id = i.event_id COLLATE "C")
),
-- Blocks of each tenant's own sequence (migration 3), used in unit order, so arrival order holds
-- within a unit too.
seqs AS MATERIALIZED (
  SELECT t.tenant_id, bm_next_seq(t.tenant_id) AS base
  FROM (SELECT tenant_id, count(*) AS c FROM fresh GROUP BY tenant_id) t, generate_series(1, (t.c + ${SEQ_BLOCK - 1}) / ${SEQ_BLOCK})
),
kept AS MATERIALIZED (
  SELECT f.*, b.base + (f.n - 1) % ${SEQ_BLOCK} AS seq
  FROM fresh f JOIN (SELECT tenant_id, base, row_number() OVER (PARTITION BY tenant_id ORDER BY base) - 1 AS block FROM seqs) b
    ON b.tenant_id = f.tenant_id AND b.block = (f.n - 1) / ${SEQ_BLOCK}
),
-- In seq order: the (tenant_id, seq) index then only ever grows at its right edge, and its pages stay full.
stored AS (INSERT INTO events (seq, ${stored}) SELECT seq, ${stored} FROM kept ORDER BY tenant_id, seq),
${QUARANTINE_CTES}${usage ? `,\n${receiptsCte('kept', RECEIPT_PARAM)},\n${usageOutboxCte('kept', SEQ_BLOCK)}` : ''}${inventory ? `,\n${inventoryOutboxCte('kept')}` : ''}
SELECT row, seq FROM kept`;
}

export const STATEMENT_SQL = statementSql(false, false);
export const STATEMENT_USAGE_SQL = statementSql(true, true);
/** Usage without the inventory's feed: the bench's measure of the usage rollups alone. */
export const STATEMENT_USAGE_ONLY_SQL = statementSql(true, false);

/**
 * The unit's arrivals per tenant and UTC day: (tenant, day, received, rejected) arrays, as
 * usage-sql.ts receiptsCte takes them. Received counts every event of the unit (duplicates within it
 * included) and every quarantine entry.
 */
export function receiptArrays(unit: CommitUnit): [number[], number[], number[], number[]] {
  const days = new Map<string, [number, number, number, number]>();
  const add = (tenant: number, receivedAt: number, rejected: number) => {
    const day = Math.floor(receivedAt / 86400);
    const key = `${tenant}/${day}`;
    const entry = days.get(key);
    if (entry === undefined) days.set(key, [tenant, day, 1, rejected]);
    else {
      entry[2]++;
      entry[3] += rejected;
    }
  };
  for (const e of unit.events) add(e.tenantId, e.receivedAt, 0);
  for (const q of unit.quarantine) add(q.tenantId, q.receivedAt, 1);
  const entries = [...days.values()];
  return [entries.map((e) => e[0]), entries.map((e) => e[1]), entries.map((e) => e[2]), entries.map((e) => e[3])];
}

// ---- Large units: event_ids and sequence blocks, then COPY ----

/**
 * Parameters: $1-$10 as for STATEMENT_SQL, then $11-$13 the client eventIds (tenant, eventId, row),
 * $14 how many sequence blocks to reserve, $15 the tenant whose sequence they come from (the COPY
 * path takes units of one tenant). Returns the rows whose eventId was new (the others are
 * duplicates) and the reserved blocks' first numbers.
 */
export const RESERVE_SQL = `WITH candidate AS (
  SELECT * FROM unnest($11::integer[], $12::text[], $13::integer[]) AS c(tenant_id, event_id, row)
),
ids AS (
  INSERT INTO event_ids (tenant_id, event_id)
  SELECT tenant_id, event_id FROM candidate
  ORDER BY tenant_id, event_id COLLATE "C"
  ON CONFLICT DO NOTHING
  RETURNING tenant_id, event_id
),
${QUARANTINE_CTES}
SELECT
  ARRAY(SELECT c.row FROM candidate c JOIN ids ON ids.tenant_id = c.tenant_id AND ids.event_id = c.event_id COLLATE "C") AS fresh,
  -- Ascending, so that seqs follow the rows' order.
  ARRAY(SELECT n FROM (SELECT bm_next_seq($15::integer) AS n FROM generate_series(1, $14::integer)) s ORDER BY n) AS blocks`;

export const COPY_SQL = `COPY events (seq, ${EVENT_COLUMNS.map(([name]) => name).join(', ')}) FROM STDIN`;

// ---- Encoding ----

const QUOTE_ESCAPE = /["\\]/;
const QUOTE_ESCAPE_ALL = /["\\]/g;

/** An element of an array literal. Text is always quoted, so that no value reads as NULL. */
function arrayElement(value: Value): string | number {
  if (value === null) return 'NULL';
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 't' : 'f';
  return '"' + (QUOTE_ESCAPE.test(value) ? value.replace(QUOTE_ESCAPE_ALL, '\\$&') : value) + '"';
}

const COPY_ESCAPE = /[\\\t\n\r]/;
const COPY_ESCAPE_ALL = /[\\\t\n\r]/g;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** A field of COPY's text format. */
function copyField(value: Value): string | number {
  if (value === null) return '\\N';
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 't' : 'f';
  return COPY_ESCAPE.test(value) ? value.replace(COPY_ESCAPE_ALL, (c) => COPY_ESCAPES[c]!) : value;
}

const text = (value: string | undefined): string | null => (value === undefined ? null : toPgText(value));

/**
 * A unit's events for either path. `add` takes the events to write (duplicates within the unit
 * already left out) and gives each distinct dictionary value a unit-local index (`values`), so that
 * each is looked up once per unit; `arrays` or `copy` then writes the rows with the ids found.
 */
export class UnitEncoder {
  /** The unit's distinct dictionary values, as events hold them, in order of first use. */
  readonly values: string[] = [];
  /** Per row, its event's index in the unit. */
  readonly ords: number[] = [];
  readonly #index = new Map<string, number>();
  /** Per row, DICT_FIELDS as indexes into `values`; -1 for absent. */
  readonly #dict: Int32Array;
  /** One row's values, in EVENT_COLUMNS order (rewritten for each row). */
  readonly #row = new Array<Value>(EVENT_COLUMNS.length);

  constructor(private readonly events: readonly EventToStore[]) {
    this.#dict = new Int32Array(events.length * DICT_FIELDS.length);
  }

  get rows(): number {
    return this.ords.length;
  }

  /** The tenant of the unit's event at `ord`. */
  tenantOf(ord: number): number {
    return this.events[ord]!.tenantId;
  }

  add(ord: number): void {
    const event: EventRecord = this.events[ord]!.event;
    const d = (this.ords.push(ord) - 1) * DICT_FIELDS.length;
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
  }

  /** The rows' client eventIds, for RESERVE_SQL ($11-$13). */
  eventIds(): { tenants: number[]; ids: string[]; rows: number[] } {
    const out = { tenants: [] as number[], ids: [] as string[], rows: [] as number[] };
    for (let row = 0; row < this.ords.length; row++) {
      const { tenantId, event } = this.events[this.ords[row]!]!;
      if (event.eventId === undefined) continue;
      out.tenants.push(tenantId);
      out.ids.push(toPgText(event.eventId));
      out.rows.push(row);
    }
    return out;
  }

  /** STATEMENT_SQL's input arrays ($11 on), in INPUT_COLUMNS order. */
  arrays(ids: readonly number[]): string[] {
    const columns = EVENT_COLUMNS.map(() => new Array<string | number>(this.ords.length));
    for (let row = 0; row < this.ords.length; row++) {
      const values = this.#fill(row, ids);
      for (let c = 0; c < values.length; c++) columns[c]![row] = arrayElement(values[c]!);
    }
    return [`{${this.ords.map((_, row) => row).join(',')}}`, ...columns.map((column) => '{' + column.join(',') + '}')];
  }

  /**
   * COPY text of the rows to store: those without a client eventId and those in `fresh`, numbered in
   * row order from the reserved blocks. Each stored event's seq is written into `seqs` at its index
   * in the unit.
   */
  copy(ids: readonly number[], fresh: ReadonlySet<number>, blocks: readonly number[], seqs: (number | undefined)[]): string {
    let out = '';
    let n = 0;
    for (let row = 0; row < this.ords.length; row++) {
      const ord = this.ords[row]!;
      if (this.events[ord]!.event.eventId !== undefined && !fresh.has(row)) continue;
      const seq = blocks[Math.floor(n / SEQ_BLOCK)]! + (n % SEQ_BLOCK);
      n++;
      seqs[ord] = seq;
      const values = this.#fill(row, ids);
      let line = String(seq);
      for (let c = 0; c < values.length; c++) line += '\t' + copyField(values[c]!);
      out += line + '\n';
    }
    return out;
  }

  #fill(row: number, ids: readonly number[]): Value[] {
    const { tenantId, receivedAt } = this.events[this.ords[row]!]!;
    const event: EventRecord = this.events[this.ords[row]!]!.event;
    const values = this.#row;
    values[0] = event.timestamp;
    values[1] = receivedAt;
    values[2] = tenantId;
    values[3] = KINDS[event.action].code;
    // In COLUMN_FIELDS order.
    let c = FIXED_COLUMNS;
    const d = row * DICT_FIELDS.length;
    for (let f = 0; f < DICT_FIELDS.length; f++) {
      const index = this.#dict[d + f]!;
      values[c++] = index === -1 ? null : ids[index]!;
    }
    for (const field of TEXT_FIELDS) values[c++] = text(event[field]);
    for (const field of INT_FIELDS) values[c++] = event[field] ?? null;
    for (const field of BOOL_FIELDS) values[c++] = event[field] ?? null;
    // JSON.stringify escapes NUL and lone surrogates, so the JSON is valid PostgreSQL text as it is.
    values[c] = encodeRest(event);
    return values;
  }
}
