/** listEvents: tenant-scoped pages of events, newest arrival first, with every field restored. */
import { setImmediate } from 'node:timers/promises';
import type { Statement } from 'better-sqlite3';
import { KINDS, actionByCode, isActionName } from '../../events/catalogue.js';
import type { EventRecord } from '../../events/catalogue.js';
import { BOOL_FIELDS, DICT_FIELDS, INT_FIELDS, TEXT_FIELDS, decodeRest } from '../row.js';
import { InvalidCursorError, serverEventId } from '../types.js';
import type { EventPage, EventQuery, StoredEvent } from '../types.js';
import type { Connection } from './connection.js';
import { FIELD_COLUMNS } from './layout.js';

const DICT_CACHE_LIMIT = 200_000;

const FIXED_COLUMNS = ['seq', 'timestamp', 'received_after', 'action'];
const COLUMNS = [...FIXED_COLUMNS, ...FIELD_COLUMNS].join(', ');
// The object key comes from object_keys, joined by id: a rowid lookup per row returned. A missing
// row gives the bare id, which #decode refuses.
const KEYED_COLUMNS = [...FIXED_COLUMNS, ...FIELD_COLUMNS.map((c) => (c === 'object_key' ? 'ifnull(k.value, object_key)' : c))].join(', ');
const JOIN_KEYS = 'LEFT JOIN object_keys k ON k.id = object_key';

type Row = (number | string | null)[];

/** The cursor is the seq of the page's last event, in base 36: opaque to clients, cheap to check. */
const CURSOR = /^[0-9a-z]{1,11}$/;

function parseCursor(cursor: string): number {
  const seq = CURSOR.test(cursor) ? parseInt(cursor, 36) : NaN;
  if (!Number.isSafeInteger(seq) || seq <= 0) {
    throw new InvalidCursorError('cursor is not a nextCursor of this store');
  }
  return seq;
}

/** Seqs per step of a backward walk: a few milliseconds of reading between yields to the event loop. */
const SCAN_WINDOW = 50_000;

export class EventReader {
  readonly #statements = new Map<string, Statement>();
  readonly #dictValue: Statement;
  readonly #dictId: Statement;
  readonly #maxSeq: Statement;
  /** id → value; dictionary rows never change once committed, so this never goes stale. */
  readonly #dict = new Map<number, string>();

  constructor(
    private readonly db: Connection,
    private readonly scanWindow = SCAN_WINDOW,
  ) {
    this.#dictValue = db.prepare('SELECT value FROM dict WHERE id = ?').pluck();
    this.#dictId = db.prepare('SELECT id FROM dict WHERE value = ?').pluck();
    this.#maxSeq = db.prepare('SELECT coalesce(max(seq), 0) FROM events').pluck();
  }

  async list(tenantId: number, query: EventQuery): Promise<EventPage> {
    if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > 1000) {
      throw new RangeError(`limit must be 1..1000, not ${query.limit}`);
    }
    const before = query.cursor === undefined ? undefined : parseCursor(query.cursor);
    const where = ['tenant = ?'];
    const params: number[] = [tenantId];
    if (query.action !== undefined) {
      if (!isActionName(query.action)) throw new RangeError(`unknown action ${String(query.action)}`);
      where.push('action = ?');
      params.push(KINDS[query.action].code);
    }
    if (query.customerId !== undefined) {
      const id = this.#dictId.get(query.customerId) as number | undefined;
      // A value never stored cannot match any event.
      if (id === undefined) return { events: [], nextCursor: null };
      where.push('customer = ?');
      params.push(id);
    }
    if (query.from !== undefined) {
      where.push('timestamp >= ?');
      params.push(query.from);
    }
    if (query.to !== undefined) {
      where.push('timestamp < ?');
      params.push(query.to);
    }
    // One row more than asked tells whether there is a next page.
    const want = query.limit + 1;
    // The access path is chosen here, not by the planner (which, without statistics, would sort a
    // whole tenant for an unfiltered page): the time index when a closed time range makes it small,
    // else a walk backwards along seq.
    const index = query.from !== undefined && query.to !== undefined ? 'events_tenant_time' : undefined;
    let rows: Row[];
    if (index === undefined) {
      rows = await this.#walk(where, params, before, want);
    } else {
      if (before !== undefined) {
        where.push('seq < ?');
        params.push(before);
      }
      // Joined after the sort and LIMIT: joined inside, every match of the range would be looked up.
      const page = `SELECT ${COLUMNS} FROM events INDEXED BY ${index} WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`;
      const sql = `SELECT ${KEYED_COLUMNS} FROM (${page}) ${JOIN_KEYS} ORDER BY seq DESC`;
      rows = this.#statement(sql).all([...params, want]) as Row[];
    }
    const more = rows.length > query.limit;
    if (more) rows.pop();
    const events = rows.map((row) => this.#decode(row));
    const last = rows.at(-1);
    return { events, nextCursor: more && last !== undefined ? (last[0] as number).toString(36) : null };
  }

  /**
   * Reads seq backwards one window at a time, yielding to the event loop in between: a filter that
   * rarely matches (a rare action, a small tenant) reads much of the table, and this thread also
   * serves ingestion.
   */
  async #walk(where: string[], params: number[], before: number | undefined, want: number): Promise<Row[]> {
    const sql = `SELECT ${KEYED_COLUMNS} FROM events NOT INDEXED ${JOIN_KEYS} WHERE ${where.join(' AND ')} AND seq >= ? AND seq < ? ORDER BY seq DESC LIMIT ?`;
    const statement = this.#statement(sql);
    const rows: Row[] = [];
    let upper = before ?? (this.#maxSeq.get() as number) + 1;
    while (rows.length < want && upper > 1) {
      const lower = Math.max(1, upper - this.scanWindow);
      for (const row of statement.all([...params, lower, upper, want - rows.length]) as Row[]) rows.push(row);
      upper = lower;
      if (rows.length < want && upper > 1) await setImmediate();
    }
    return rows;
  }

  #statement(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql).raw();
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #decode(row: Row): StoredEvent {
    const seq = row[0] as number;
    const timestamp = row[1] as number;
    const code = row[3] as number;
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
      if (typeof value === 'number') throw new Error(`object key id ${value} is missing`);
      if (value !== null) event[field] = value;
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
    return Object.assign(event, { eventId: event.eventId ?? serverEventId(seq), receivedAt: timestamp + (row[2] as number) });
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
