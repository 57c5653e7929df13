/**
 * The events.page read: a tenant's events, newest first, with every field restored. It runs on a
 * reader thread (reader-worker.ts), in steps of a bounded number of index entries, and checks its
 * budget between steps. Every step reads only this tenant's rows, through an index that starts with
 * the tenant, so a page costs what this tenant's own data costs, and a page starts where the previous
 * one stopped instead of reading it again.
 */
import type { Statement } from 'better-sqlite3';
import { KINDS, actionByCode, isActionName } from '../../events/catalogue.js';
import type { EventRecord } from '../../events/catalogue.js';
import { BOOL_FIELDS, DICT_FIELDS, INT_FIELDS, TEXT_FIELDS, decodeRest } from '../row.js';
import { InvalidCursorError, serverEventId } from '../types.js';
import type { EventPage, EventQuery, StoredEvent } from '../types.js';
import type { Connection } from './connection.js';
import { CursorSeal } from './cursor.js';
import type { Position } from './cursor.js';
import { FIELD_COLUMNS } from './layout.js';
import type { ReadBudget } from './read-budget.js';

const DICT_CACHE_LIMIT = 200_000;

const FIXED_COLUMNS = ['seq', 'tseq', 'timestamp', 'received_after', 'action'];
const COLUMNS = [...FIXED_COLUMNS, ...FIELD_COLUMNS].join(', ');
const C_SEQ = 0;
const C_TSEQ = 1;
const C_TIMESTAMP = 2;
const C_RECEIVED_AFTER = 3;
const C_ACTION = 4;
/** A field column's position in a row read with COLUMNS. */
const column = (name: string): number => FIXED_COLUMNS.length + FIELD_COLUMNS.indexOf(name);
const C_EVENT_ID = column('event_id');

type Row = (number | string | null)[];

/**
 * Index entries per step when filters may skip rows: a few milliseconds of reading between budget
 * checks. The step's end is found in the index alone; only the rows that match are read out.
 */
const STEP_ROWS = 5000;
/** Past every timestamp and seq a row can hold (both are exact integers in a double). */
const END = Number.MAX_SAFE_INTEGER;

/**
 * Where a walk reads, below the position: arrival order on the (tenant, seq) index, or a time range
 * on the (tenant, timestamp, seq) index, newest timestamp first. The range's end is the first
 * position, (to, 0), and a bounded step's start is its edge, not `from`: SQLite bounds the index by
 * the row values only when no plain timestamp bound competes (else each step would read again to
 * the range's far end).
 */
const WALKS = {
  seq: { index: 'events_tenant_seq', below: 'seq < ?', start: [], atOrAbove: 'seq >= ?', order: 'seq DESC' },
  range: { index: 'events_tenant_time', below: '(timestamp, rowid) < (?, ?)', start: ['timestamp >= ?'], atOrAbove: '(timestamp, rowid) >= (?, ?)', order: 'timestamp DESC, seq DESC' },
} as const;

type Walk = keyof typeof WALKS;

/** The rows below the position, filtered, down to the step's edge when `bounded`, else to the start. */
export function pageSql(walk: Walk, filters: readonly string[], bounded: boolean): string {
  const w = WALKS[walk];
  const where = ['tenant = ?', w.below, ...(bounded ? [w.atOrAbove] : w.start), ...filters].join(' AND ');
  return `SELECT ${COLUMNS} FROM events INDEXED BY ${w.index} WHERE ${where} ORDER BY ${w.order} LIMIT ?`;
}

/** The position of the step's last index entry below the position (`OFFSET` step - 1), from the index alone. */
export function edgeSql(walk: Walk): string {
  const w = WALKS[walk];
  const where = ['tenant = ?', w.below, ...w.start].join(' AND ');
  return `SELECT timestamp, seq FROM events INDEXED BY ${w.index} WHERE ${where} ORDER BY ${w.order} LIMIT 1 OFFSET ?`;
}

export class EventReader {
  readonly #statements = new Map<string, Statement>();
  readonly #dictValue: Statement;
  readonly #dictId: Statement;
  readonly #objectKey: Statement;
  readonly #seal: CursorSeal;
  /** id → value; dictionary rows never change once committed, so this never goes stale. */
  readonly #dict = new Map<number, string>();

  constructor(
    private readonly db: Connection,
    private readonly stepRows = STEP_ROWS,
  ) {
    this.#dictValue = db.prepare('SELECT value FROM dict WHERE id = ?').pluck();
    this.#dictId = db.prepare('SELECT id FROM dict WHERE value = ?').pluck();
    this.#objectKey = db.prepare('SELECT value FROM object_keys WHERE id = ?').pluck();
    this.#seal = CursorSeal.of(db);
  }

  list(tenantId: number, query: EventQuery, budget: ReadBudget): EventPage {
    if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > 1000) {
      throw new RangeError(`limit must be 1..1000, not ${query.limit}`);
    }
    const ranged = query.from !== undefined || query.to !== undefined;
    const from = query.from ?? -END;
    let position: Position = query.cursor === undefined ? { timestamp: ranged ? (query.to ?? END) : null, seq: 0 } : this.#seal.open(tenantId, query.cursor);
    if ((position.timestamp !== null) !== ranged) {
      throw new InvalidCursorError(`cursor is from a listing ${ranged ? 'without' : 'with'} from/to`);
    }
    // Sealed, so made by this store, but maybe for another range: past `to` it would answer the first page again.
    if (query.cursor !== undefined && ranged && (position.timestamp! < from || position.timestamp! >= (query.to ?? END))) {
      throw new InvalidCursorError('cursor is from a listing of another from/to');
    }
    if (query.cursor === undefined && !ranged) position.seq = END;
    const filters: string[] = [];
    const values: number[] = [];
    if (query.action !== undefined) {
      if (!isActionName(query.action)) throw new RangeError(`unknown action ${String(query.action)}`);
      filters.push('action = ?');
      values.push(KINDS[query.action].code);
    }
    if (query.customerId !== undefined) {
      // A value no tenant stored reads exactly like one only other tenants stored (id -1 matches no
      // row): what a query costs and answers must not tell whether another tenant uses a value.
      filters.push('customer = ?');
      values.push((this.#dictId.get(query.customerId) as number | undefined) ?? -1);
    }
    const walk = ranged ? 'range' : 'seq';
    const below = (p: Position): number[] => (ranged ? [p.timestamp!, p.seq] : [p.seq]);
    const start = ranged ? [from] : [];
    // One row more than asked tells whether there is a next page.
    const want = query.limit + 1;
    const rows: Row[] = [];
    for (;;) {
      // Unfiltered, every entry read is a row returned: no step needed.
      const edge = filters.length === 0 ? undefined : (this.#statement(edgeSql(walk)).get(tenantId, ...below(position), ...start, this.stepRows - 1) as Row | undefined);
      const edgePosition: Position | undefined = edge === undefined ? undefined : { timestamp: ranged ? (edge[0] as number) : null, seq: edge[1] as number };
      const page = this.#statement(pageSql(walk, filters, edge !== undefined));
      const lower = edgePosition === undefined ? start : below(edgePosition);
      for (const row of page.all(tenantId, ...below(position), ...lower, ...values, want - rows.length) as Row[]) rows.push(row);
      if (rows.length === want || edgePosition === undefined) break;
      position = edgePosition;
      budget.check();
    }
    const more = rows.length > query.limit;
    if (more) rows.pop();
    const events = rows.map((row) => this.#decode(row));
    const last = rows.at(-1);
    return { events, nextCursor: more && last !== undefined ? this.#seal.seal(tenantId, positionOf(last, ranged)) : null };
  }

  #decode(row: Row): StoredEvent {
    const seq = row[C_SEQ] as number;
    const timestamp = row[C_TIMESTAMP] as number;
    const code = row[C_ACTION] as number;
    const action = actionByCode(code);
    if (action === undefined) throw new Error(`event ${seq} has action code ${code}, unknown to this version`);
    // provider is NOT NULL: the dictionary loop below sets it.
    const event: EventRecord = { action, timestamp, provider: '' };
    // In FIELD_COLUMNS order.
    let c = FIXED_COLUMNS.length;
    for (const field of DICT_FIELDS) {
      const id = row[c++] as number | null;
      if (id !== null) event[field] = this.#value(id);
    }
    for (const field of TEXT_FIELDS) {
      const value = row[c++] as string | number | null;
      if (value !== null) event[field] = field === 'objectKey' ? this.#objectKeyValue(value as number) : (value as string);
    }
    for (const field of INT_FIELDS) {
      const value = row[c++] as number | null;
      if (value !== null) event[field] = value;
    }
    for (const field of BOOL_FIELDS) {
      const value = row[c++] as number | null;
      if (value !== null) event[field] = value === 1;
    }
    decodeRest(row[c] as string | null, event);
    // Rows stored before per-tenant numbering (migration 3) have no tseq: their id is their seq.
    const eventId = (row[C_EVENT_ID] as string | null) ?? serverEventId((row[C_TSEQ] as number | null) ?? seq);
    return Object.assign(event, { eventId, receivedAt: timestamp + (row[C_RECEIVED_AFTER] as number) });
  }

  #statement(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql).raw();
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #objectKeyValue(id: number): string {
    const value = this.#objectKey.get(id) as string | undefined;
    if (value === undefined) throw new Error(`object key id ${id} is missing`);
    return value;
  }

  #value(id: number): string {
    let value = this.#dict.get(id);
    if (value === undefined) {
      value = this.#dictValue.get(id) as string | undefined;
      if (value === undefined) throw new Error(`dictionary id ${id} is missing`);
      if (this.#dict.size > DICT_CACHE_LIMIT) this.#dict.clear();
      this.#dict.set(id, value);
    }
    return value;
  }
}

const positionOf = (row: Row, ranged: boolean): Position => ({ timestamp: ranged ? (row[C_TIMESTAMP] as number) : null, seq: row[C_SEQ] as number });
