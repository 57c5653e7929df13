/**
 * The PostgreSQL store. Many stateless processes share one database, so every correctness decision
 * (exactly-once, server ids, first key) is made by the database; per-process state is only a cache of
 * facts that never change once committed (dictionary ids).
 *
 * Write path (encode.ts): a small unit is one statement, its own transaction, in one round trip; a
 * unit of copyMinEvents or more is a transaction of event_ids and sequence blocks, then COPY. Either
 * way the unit is atomic and its outcomes are known only after COMMIT.
 */
import { DatabaseError, type Pool, type PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { actionByCode, KINDS, type EventRecord } from '../../events/catalogue.js';
import type { FieldError } from '../../events/field-error.js';
import { BOOL_FIELDS, DICT_FIELDS, INT_FIELDS, TEXT_FIELDS, decodeRest, pgColumn } from '../row.js';
import type { ColumnField } from '../row.js';
import {
  InvalidCursorError,
  ReadAbortedError,
  serverEventId,
  StoreUnavailableError,
  FOLD_BEFORE_READ_MS,
  type ApiKeyRecord,
  type KeyScope,
  type CommitUnit,
  type EventOutcome,
  type EventPage,
  type EventQuery,
  type JobOwnership,
  type KeyStore,
  type NewApiKey,
  type QuarantineEntry,
  type QuarantineQuery,
  type QuarantineStore,
  type ReadCounts,
  type Store,
  type StoredEvent,
  type ThreadReadsSource,
  type UsageStore,
} from '../types.js';
import { COPY_SQL, fromPgText, receiptArrays, RESERVE_SQL, SEQ_BLOCK, STATEMENT_SQL, STATEMENT_USAGE_ONLY_SQL, STATEMENT_USAGE_SQL, toPgText, UnitEncoder } from './encode.js';
import { USAGE_AFTER_COPY_CTES } from './usage-sql.js';
import { PostgresUsageReads } from './usage.js';
import { PostgresUsageFold } from './usage-fold.js';
import { PostgresInventory } from './inventory.js';
import { POSTGRES_CATCH_UP_SPAN } from '../inventory-step.js';
import { BackgroundPace } from '../background-pace.js';
import { CancellableReads } from './cancellable.js';
import { inventoryOutboxAfterCopyCte } from './inventory-sql.js';
import { INVENTORY_ACTIONS } from '../../inventory/timeline.js';
import { LOCK_CLASS } from './migrate.js';

const LOCK_FIRST_KEY = 3;

// ---- Dictionary ----

/**
 * Dictionary ids, cached per process: a committed value -> id mapping never changes. Values are
 * inserted (ON CONFLICT DO NOTHING) outside the unit's transaction, so other processes never wait on
 * a unit to learn an id; an unused value left by a failed unit is harmless.
 */
class Dictionary {
  private readonly cache = new Map<string, number>();

  constructor(
    private readonly pool: Pool,
    private readonly maxCached = 200_000,
  ) {}

  /** Ids of `values` (already toPgText-encoded). */
  async ids(values: Iterable<string>): Promise<Map<string, number>> {
    const found = new Map<string, number>();
    const missing: string[] = [];
    for (const value of values) {
      const id = this.cache.get(value);
      if (id === undefined) missing.push(value);
      else found.set(value, id);
    }
    if (missing.length === 0) return found;
    // Select first, insert only what is missing: a conflicting insert still burns an identity value.
    let rest = await this.fetch(missing, found, 'SELECT id, value FROM dict WHERE value = ANY($1::text[])');
    if (rest.length > 0) {
      rest = await this.fetch(
        rest.sort(),
        found,
        'INSERT INTO dict (value) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING RETURNING id, value',
      );
    }
    // Lost a race: another process committed the value after this statement's snapshot.
    if (rest.length > 0) rest = await this.fetch(rest, found, 'SELECT id, value FROM dict WHERE value = ANY($1::text[])');
    if (rest.length > 0) throw new Error(`dictionary values not found after insert: ${rest.length}`);
    return found;
  }

  private async fetch(values: string[], into: Map<string, number>, sql: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: number; value: string }>(sql, [values]);
    for (const { id, value } of rows) {
      into.set(value, id);
      if (this.cache.size >= this.maxCached) {
        // Oldest first; re-fetching an evicted value costs one SELECT.
        const oldest = this.cache.keys().next();
        if (!oldest.done) this.cache.delete(oldest.value);
      }
      this.cache.set(value, id);
    }
    return values.filter((value) => !into.has(value));
  }
}

// ---- Errors ----

function unavailable(err: unknown): StoreUnavailableError {
  if (err instanceof StoreUnavailableError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new StoreUnavailableError(`PostgreSQL cannot take the request: ${message}`, { cause: err });
}

/**
 * Whether a failed read or admin call is the database being unreachable or unable to work (as
 * opposed to a bug): connection and socket errors, and SQLSTATE classes 08 (connection), 53
 * (resources, e.g. disk full), 57 (shutdown, cancel), 58 (system), plus read-only transactions
 * and lock timeouts.
 */
function isUnavailable(err: unknown): boolean {
  // A read whose caller left is not the database's failure.
  if (err instanceof ReadAbortedError) return false;
  if (!(err instanceof DatabaseError)) return true;
  const code = err.code ?? '';
  return /^(08|53|57|58)/.test(code) || code === '25006' || code === '55P03' || code === '40P01';
}

/** Runs a read or admin call, turning unavailability into StoreUnavailableError. */
export async function guarded<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw isUnavailable(err) ? unavailable(err) : err;
  }
}

const RETRYABLE = new Set(['40P01', '40001']);

async function transaction<T>(pool: Pool, run: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await run(client);
    await client.query('COMMIT');
    client.release();
    return result;
  } catch (err) {
    // ROLLBACK if the connection still works; otherwise drop it from the pool.
    try {
      await client.query('ROLLBACK');
      client.release();
    } catch {
      client.release(true);
    }
    throw err;
  }
}

/** A bigint seq as a JS number; they travel as numbers, exact only up to 2^53 (285 years at a million events a second). */
function safeSeq(seq: string): number {
  const n = Number(seq);
  if (n > Number.MAX_SAFE_INTEGER - SEQ_BLOCK) throw new Error(`event_seq ${seq} is beyond 2^53`);
  return n;
}

/** After COPY, in its transaction: receipts, the usage outbox rows and the inventory outbox row, in one round trip. */
const AFTER_COPY_SQL = `WITH ${USAGE_AFTER_COPY_CTES},
${inventoryOutboxAfterCopyCte(6, 9)}
SELECT 1`;
/** The same without the inventory's outbox row (the bench's usage alone): parameters $1-$8 only. */
const AFTER_COPY_USAGE_ONLY_SQL = `WITH ${USAGE_AFTER_COPY_CTES}
SELECT 1`;
const INVENTORY = new Set<string>(INVENTORY_ACTIONS);

/**
 * The runs of consecutive numbers in ascending `seqs`, as [firsts, lasts]: the usage outbox rows of a
 * COPY (its seqs come from blocks this transaction reserved, so every run holds only its events).
 */
function seqRanges(seqs: readonly number[]): [number[], number[]] {
  const firsts: number[] = [];
  const lasts: number[] = [];
  for (let i = 0; i < seqs.length; i++) {
    if (i === 0 || seqs[i] !== seqs[i - 1]! + 1) {
      firsts.push(seqs[i]!);
      lasts.push(seqs[i]!);
    } else lasts[lasts.length - 1] = seqs[i]!;
  }
  return [firsts, lasts];
}

/**
 * The COPY path inside a unit's transaction (encode.ts): RESERVE_SQL with `params` (event_ids,
 * sequence blocks, quarantine), then COPY of the events it found new, their seqs written into `seqs`.
 */
async function reserveAndCopy(client: PoolClient, params: unknown[], encoder: UnitEncoder, ids: readonly number[], seqs: (number | undefined)[]): Promise<void> {
  const { rows } = await client.query<{ fresh: number[]; blocks: string[] }>({ name: 'bm_reserve', text: RESERVE_SQL, values: params });
  const { fresh, blocks } = rows[0]!;
  const text = encoder.copy(ids, new Set(fresh), blocks.map(safeSeq), seqs);
  if (text !== '') await copyIn(client, text);
}

/** Sends COPY data and waits for the server to take it all. */
async function copyIn(client: PoolClient, text: string): Promise<void> {
  const stream = client.query(copyFrom(COPY_SQL));
  await new Promise<void>((resolve, reject) => {
    stream.on('finish', resolve).on('error', reject);
    stream.end(text);
  });
}

// ---- Reading rows ----

/** A row of the page query: the fixed columns, then each column field under its own name. */
type EventRow = { seq: string; ts: string; received_at: string; action: number; rest: string | null } & {
  [F in ColumnField]: string | number | boolean | null;
};

/**
 * The page query's select list: dictionary fields joined to their values (d0, d1...), every column
 * field under its own name, as EventRow reads them.
 */
const SELECT_FIELDS = [
  ...DICT_FIELDS.map((field, i) => `d${i}.value AS "${field}"`),
  ...[...TEXT_FIELDS, ...INT_FIELDS, ...BOOL_FIELDS].map((field) => `e.${pgColumn(field)} AS "${field}"`),
].join(', ');
const JOIN_DICT = DICT_FIELDS.map((field, i) => `LEFT JOIN dict d${i} ON d${i}.id = e.${pgColumn(field)}`).join('\n');

function toStoredEvent(row: EventRow): StoredEvent {
  const action = actionByCode(row.action);
  if (action === undefined) throw new Error(`unknown action code ${row.action} in events row ${row.seq}`);
  // provider is NOT NULL: the loop below sets it.
  const event: EventRecord = { action, timestamp: Number(row.ts), provider: '' };
  for (const field of [...DICT_FIELDS, ...TEXT_FIELDS]) {
    const value = row[field] as string | null;
    if (value !== null) event[field] = fromPgText(value);
  }
  // bigint columns come as strings.
  for (const field of INT_FIELDS) if (row[field] !== null) event[field] = Number(row[field]);
  for (const field of BOOL_FIELDS) if (row[field] !== null) event[field] = row[field] as boolean;
  decodeRest(row.rest, event);
  return Object.assign(event, { eventId: event.eventId ?? serverEventId(BigInt(row.seq)), receivedAt: Number(row.received_at) });
}

/**
 * The cursor is where the page's last event stands: its seq (numbered per tenant, so it says nothing
 * of other tenants), and in a listing by time range also its timestamp, in base 36.
 */
function encodeCursor(row: EventRow, ranged: boolean): string {
  return cursorText(ranged ? BigInt(row.ts) : undefined, BigInt(row.seq));
}

const cursorText = (ts: bigint | undefined, seq: bigint): string => (ts === undefined ? seq.toString(36) : `${ts.toString(36)}.${seq.toString(36)}`);

const CURSOR = /^(?:(-?[0-9a-z]{1,13})\.)?([0-9a-z]{1,13})$/;
const MAX_SEQ = 2n ** 63n - 1n;

function base36(digits: string): bigint {
  let n = 0n;
  for (const digit of digits.replace('-', '')) n = n * 36n + BigInt(parseInt(digit, 36));
  return digits.startsWith('-') ? -n : n;
}

/**
 * The position to continue below, as decimal strings (bigint parameters), only where this listing
 * could have made it: as encodeCursor writes it, a seq the store hands out (from 1), and a timestamp
 * within the listing's from/to. A hand-made one past `to` would answer the first page again as if no
 * cursor were given. (A seq above every one handed out is not told apart: that would take a read.)
 */
function decodeCursor(cursor: string, query: Pick<EventQuery, 'from' | 'to'>): { ts: string | undefined; seq: string } {
  const ranged = query.from !== undefined || query.to !== undefined;
  const match = CURSOR.exec(cursor);
  if (match !== null && (match[1] !== undefined) === ranged) {
    const seq = base36(match[2]!);
    const ts = match[1] === undefined ? undefined : base36(match[1]);
    // bigint against number compares exactly.
    const inRange = ts === undefined || (ts <= MAX_SEQ && ts >= -MAX_SEQ && (query.from === undefined || ts >= query.from) && (query.to === undefined || ts < query.to));
    if (seq >= 1n && seq <= MAX_SEQ && inRange && cursorText(ts, seq) === cursor) return { ts: ts?.toString(), seq: seq.toString() };
  }
  throw new InvalidCursorError('cursor is not a nextCursor of this store for this listing');
}

interface KeyRow {
  id: string;
  tenant_id: number;
  tenant_name: string;
  scope: KeyScope;
  created_at: string;
  revoked_at: string | null;
}

function toKeyRecord(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    tenantName: row.tenant_name,
    scope: row.scope,
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}

const KEY_COLUMNS = 'k.id, k.tenant_id, t.name AS tenant_name, k.scope, k.created_at, k.revoked_at';

interface QuarantineRow {
  id: string;
  tenant_id: number;
  tenant_name: string | null;
  received_at: string;
  idx: number | null;
  truncated: boolean;
  code: string;
  errors: string;
  source: string;
  body: Buffer;
  replayed_at: string | null;
}

function toQuarantineEntry(row: QuarantineRow): QuarantineEntry {
  const entry: QuarantineEntry = {
    id: Number(row.id),
    tenantId: row.tenant_id,
    tenantName: row.tenant_name ?? '',
    receivedAt: Number(row.received_at),
    code: row.code,
    errors: JSON.parse(row.errors) as FieldError[],
    source: row.source,
    body: row.body,
    truncated: row.truncated,
    replayedAt: row.replayed_at === null ? null : Number(row.replayed_at),
  };
  if (row.idx !== null) entry.index = row.idx;
  return entry;
}

const QUARANTINE_COLUMNS =
  'q.id, q.tenant_id, t.name AS tenant_name, q.received_at, q.idx, q.truncated, q.code, q.errors, q.source, q.body, q.replayed_at';

// ---- The store ----

export class PostgresStore implements Store {
  readonly backend = 'postgres';
  readonly keys: KeyStore;
  readonly quarantine: QuarantineStore;
  readonly usage: UsageStore;
  readonly inventory: PostgresInventory;
  readonly storageFeed: PostgresInventory;
  readonly threadReads: ThreadReadsSource;
  private readonly dictionary: Dictionary;
  /** Every read given a signal by the HTTP layer goes through these, and is counted here. */
  private readonly cancellable: CancellableReads;
  /** When this process last committed events (performance.now()): the background fold waits while it does. */
  private committedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly pool: Pool,
    url: string,
    private readonly copyMinEvents: number,
    private readonly jobs: JobOwnership,
    private readonly onClose: () => Promise<void>,
    /** false only in the bench: events are stored without usage receipts and outbox rows (so nothing is folded). */
    private readonly withUsage = true,
    /** false only in the bench (usage rollups alone): events are stored without the inventory's outbox rows. Off with usage too. */
    private readonly withInventory = true,
    /** How long a usage read may fold a backlog before answering 503. */
    foldBeforeReadMs = FOLD_BEFORE_READ_MS,
    /** Seqs of pending events one inventory catch-up step applies. */
    catchUpSpan = POSTGRES_CATCH_UP_SPAN,
  ) {
    this.dictionary = new Dictionary(pool);
    this.keys = new PostgresKeyStore(pool);
    this.quarantine = new PostgresQuarantineStore(pool);
    this.cancellable = new CancellableReads(pool);
    const reads = new PostgresUsageReads(pool, guarded, this.cancellable);
    const fold = new PostgresUsageFold(pool, guarded, () => this.committedAt);
    // Every read folds what is pending first, so it sees every event committed before it.
    this.usage = {
      query: async (tenantId, query, signal) => {
        await fold.catchUp(Date.now() + foldBeforeReadMs);
        return reads.query(tenantId, query, signal);
      },
      version: async (tenantId, toDay, signal) => {
        await fold.catchUp(Date.now() + foldBeforeReadMs);
        return reads.version(tenantId, toDay, signal);
      },
      reconcile: async (tenantId, fromDay, toDay, signal) => {
        await fold.catchUp(Date.now() + foldBeforeReadMs);
        return reads.reconcile(tenantId, fromDay, toDay, signal);
      },
      rebuild: (tenantId, fromHour, toHour) => fold.rebuild(tenantId, fromHour, toHour),
      catchUp: (options) => (options?.background === true ? fold.background() : fold.catchUp()),
      lag: () => fold.lag(),
    };
    this.inventory = new PostgresInventory(pool, guarded, foldBeforeReadMs, this.cancellable, catchUpSpan, new BackgroundPace(() => this.committedAt));
    this.storageFeed = this.inventory;
    // Another thread opens a pool of its own and catches up itself, as these reads do.
    this.threadReads = { spec: { backend: 'postgres', url, foldBeforeReadMs } };
  }

  async commit(unit: CommitUnit): Promise<EventOutcome[]> {
    const { events } = unit;
    const encoder = new UnitEncoder(events);
    // Exactly-once inside the unit is decided here: only the first occurrence of (tenant, eventId)
    // goes to the database; across units and processes the event_ids primary key decides.
    let seen: Set<string> | undefined;
    for (let ord = 0; ord < events.length; ord++) {
      const { tenantId, event } = events[ord]!;
      if (event.eventId !== undefined) {
        const key = `${tenantId}/${event.eventId}`;
        seen ??= new Set();
        if (seen.has(key)) continue;
        seen.add(key);
      }
      encoder.add(ord);
    }
    const seqs = new Array<number | undefined>(events.length);
    if (encoder.rows > 0 || unit.quarantine.length > 0 || (unit.replayed?.ids.length ?? 0) > 0) {
      try {
        const ids = await this.dictIds(encoder.values);
        await this.runCommit(unit, encoder, ids, seqs);
        this.committedAt = performance.now();
      } catch (err) {
        throw unavailable(err);
      }
    }
    // An event with a client eventId and no seq was a duplicate; one without must have been stored.
    return events.map(({ event }, ord): EventOutcome => {
      const seq = seqs[ord];
      if (event.eventId !== undefined) return { eventId: event.eventId, duplicate: seq === undefined };
      if (seq === undefined) throw unavailable(new Error(`event ${ord} without eventId was not stored`));
      return { eventId: serverEventId(seq), duplicate: false };
    });
  }

  /** Ids of dictionary values as events hold them (the dictionary stores them toPgText-encoded), in order. */
  private async dictIds(values: readonly string[]): Promise<number[]> {
    if (values.length === 0) return [];
    const encoded = values.map(toPgText);
    const ids = await this.dictionary.ids(encoded);
    return encoded.map((value) => ids.get(value)!);
  }

  /**
   * Writes the unit by one statement or, when large, by event_ids + COPY (encode.ts). A deadlock or
   * serialization failure rolled it all back, so retrying is safe.
   */
  private async runCommit(unit: CommitUnit, encoder: UnitEncoder, ids: number[], seqs: (number | undefined)[]): Promise<void> {
    const q = unit.quarantine;
    const params: unknown[] = [
      q.map((e) => e.tenantId),
      q.map((e) => e.receivedAt),
      q.map((e) => e.index ?? null),
      q.map((e) => e.truncated),
      q.map((e) => e.code),
      q.map((e) => JSON.stringify(e.errors)),
      q.map((e) => e.source),
      q.map((e) => e.body),
      unit.replayed?.ids ?? [],
      unit.replayed?.at ?? null,
    ];
    // COPY numbers the events from one tenant's sequence: a unit of several tenants goes by statement.
    const tenant = unit.events[0]?.tenantId;
    const byCopy = encoder.rows >= this.copyMinEvents && unit.events.every((e) => e.tenantId === tenant);
    if (byCopy) {
      const candidates = encoder.eventIds();
      params.push(candidates.tenants, candidates.ids, candidates.rows, Math.ceil(encoder.rows / SEQ_BLOCK), tenant);
    } else {
      params.push(...encoder.arrays(ids));
    }
    const receipts = this.withUsage ? receiptArrays(unit) : undefined;
    if (receipts !== undefined && !byCopy) params.push(...receipts);
    for (let attempt = 1; ; attempt++) {
      try {
        if (byCopy) await this.commitByCopy(tenant!, unit.events, params, encoder, ids, seqs, receipts);
        else await this.commitByStatement(params, encoder, seqs);
        return;
      } catch (err) {
        seqs.fill(undefined);
        if (attempt >= 3 || !(err instanceof DatabaseError) || !RETRYABLE.has(err.code ?? '')) throw err;
      }
    }
  }

  /** One statement, its own transaction. */
  private async commitByStatement(params: unknown[], encoder: UnitEncoder, seqs: (number | undefined)[]): Promise<void> {
    const statement = !this.withUsage
      ? { name: 'bm_commit', text: STATEMENT_SQL }
      : this.withInventory
        ? { name: 'bm_commit_usage', text: STATEMENT_USAGE_SQL }
        : { name: 'bm_commit_usage_only', text: STATEMENT_USAGE_ONLY_SQL };
    const { rows } = await this.pool.query<{ row: number; seq: string }>({ ...statement, values: params });
    for (const { row, seq } of rows) seqs[encoder.ords[row]!] = safeSeq(seq);
  }

  private async commitByCopy(tenant: number, events: CommitUnit['events'], params: unknown[], encoder: UnitEncoder, ids: number[], seqs: (number | undefined)[], receipts: unknown[] | undefined): Promise<void> {
    await transaction(this.pool, async (client) => {
      await reserveAndCopy(client, params, encoder, ids, seqs);
      if (receipts === undefined) return;
      const copied: number[] = [];
      // Stored per receipt row (tenant and arrival day), counted here from the events copied.
      const stored = new Map<string, number>();
      // The inventory outbox row: the copied inventory events' earliest timestamp and seq range.
      let fromTs: number | null = null;
      let firstSeq: number | null = null;
      let lastSeq: number | null = null;
      seqs.forEach((seq, ord) => {
        if (seq === undefined) return;
        const { receivedAt, event } = events[ord]!;
        copied.push(seq);
        const key = `${tenant}/${Math.floor(receivedAt / 86400)}`;
        stored.set(key, (stored.get(key) ?? 0) + 1);
        if (this.withInventory && INVENTORY.has(event.action)) {
          fromTs = fromTs === null ? event.timestamp : Math.min(fromTs, event.timestamp);
          firstSeq = firstSeq === null ? seq : Math.min(firstSeq, seq);
          lastSeq = lastSeq === null ? seq : Math.max(lastSeq, seq);
        }
      });
      const [rTenants, rDays] = receipts as [number[], number[]];
      const storedPerRow = rTenants.map((t, i) => stored.get(`${t}/${rDays[i]}`) ?? 0);
      const usageValues = [...receipts, storedPerRow, tenant, ...seqRanges(copied)];
      if (this.withInventory) await client.query({ name: 'bm_after_copy', text: AFTER_COPY_SQL, values: [...usageValues, fromTs, firstSeq, lastSeq] });
      else await client.query({ name: 'bm_after_copy_usage_only', text: AFTER_COPY_USAGE_ONLY_SQL, values: usageValues });
    });
  }

  readCounts(): ReadCounts {
    const { waiting, running } = this.cancellable.abandoned;
    return { waiting: this.pool.waitingCount, abandonedWaiting: waiting, abandonedRunning: running };
  }

  async listEvents(tenantId: number, query: EventQuery, signal?: AbortSignal): Promise<EventPage> {
    const params: unknown[] = [tenantId];
    const where = ['tenant_id = $1'];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (query.action !== undefined) add('action = ?', KINDS[query.action].code);
    if (query.customerId !== undefined) add('customer_id = (SELECT id FROM dict WHERE value = ?)', toPgText(query.customerId));
    if (query.from !== undefined) add('ts >= ?', query.from);
    if (query.to !== undefined) add('ts < ?', query.to);
    // With a time range, newest timestamp first (the (tenant_id, ts) index gives that order); else
    // newest arrival first.
    const ranged = query.from !== undefined || query.to !== undefined;
    if (query.cursor !== undefined) {
      const position = decodeCursor(query.cursor, query);
      if (position.ts === undefined) add('seq < ?', position.seq);
      else {
        // ts <= bounds the index range; the row comparison places the cursor within that timestamp.
        params.push(position.ts, position.seq);
        where.push(`ts <= $${params.length - 1}`, `(ts, seq) < ($${params.length - 1}, $${params.length})`);
      }
    }
    const order = ranged ? 'ts DESC, seq DESC' : 'seq DESC';
    params.push(query.limit + 1);
    const sql = `SELECT e.seq, e.ts, e.received_at, e.action, e.rest, ${SELECT_FIELDS}
      FROM (SELECT * FROM events WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT $${params.length}) e
      ${JOIN_DICT}
      ORDER BY ${order.replace(/(ts|seq) /g, 'e.$1 ')}`;
    const { rows } = await guarded(() => this.cancellable.query<EventRow>({ text: sql, values: params }, signal));
    const more = rows.length > query.limit;
    const page = more ? rows.slice(0, query.limit) : rows;
    const last = page[page.length - 1];
    return { events: page.map(toStoredEvent), nextCursor: more && last !== undefined ? encodeCursor(last, ranged) : null };
  }

  async checkWritable(): Promise<void> {
    let row: { recovery: boolean; read_only: string } | undefined;
    try {
      const { rows } = await this.pool.query<{ recovery: boolean; read_only: string }>(
        "SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') AS read_only",
      );
      row = rows[0];
    } catch (err) {
      throw unavailable(err);
    }
    if (row === undefined || row.recovery || row.read_only === 'on') {
      throw new StoreUnavailableError('PostgreSQL is read-only (standby or read-only transaction mode)');
    }
  }

  claimJobs(): Promise<boolean> {
    return this.jobs.claimJobs();
  }

  close(): Promise<void> {
    return this.onClose();
  }
}

class PostgresKeyStore implements KeyStore {
  constructor(private readonly pool: Pool) {}

  create(key: NewApiKey): Promise<ApiKeyRecord> {
    return guarded(() => transaction(this.pool, (client) => insertKey(client, key)));
  }

  createIfNone(key: NewApiKey): Promise<ApiKeyRecord | undefined> {
    return guarded(() =>
      transaction(this.pool, async (client) => {
        // Serializes concurrent first starts: the second one waits, then sees the first one's key.
        await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS, LOCK_FIRST_KEY]);
        const { rows } = await client.query('SELECT 1 FROM api_keys LIMIT 1');
        return rows.length > 0 ? undefined : insertKey(client, key);
      }),
    );
  }

  async findActiveByHash(hash: Buffer): Promise<ApiKeyRecord | undefined> {
    const { rows } = await guarded(() =>
      this.pool.query<KeyRow>(
        `SELECT ${KEY_COLUMNS} FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.hash = $1 AND k.revoked_at IS NULL`,
        [hash],
      ),
    );
    return rows[0] === undefined ? undefined : toKeyRecord(rows[0]);
  }

  async list(): Promise<ApiKeyRecord[]> {
    const { rows } = await guarded(() =>
      this.pool.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys k JOIN tenants t ON t.id = k.tenant_id ORDER BY k.created_at, k.id`),
    );
    return rows.map(toKeyRecord);
  }

  async revoke(id: string, at: number): Promise<boolean> {
    const result = await guarded(() =>
      this.pool.query('UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL', [id, at]),
    );
    return (result.rowCount ?? 0) > 0;
  }
}

async function insertKey(client: PoolClient, key: NewApiKey): Promise<ApiKeyRecord> {
  const tenantId = await tenantIdFor(client, key.tenantName);
  await client.query('INSERT INTO api_keys (id, tenant_id, hash, scope, created_at) VALUES ($1, $2, $3, $4, $5)', [
    key.id,
    tenantId,
    key.hash,
    key.scope ?? 'all',
    key.createdAt,
  ]);
  return { id: key.id, tenantId, tenantName: key.tenantName, scope: key.scope ?? 'all', createdAt: key.createdAt, revokedAt: null };
}

async function tenantIdFor(client: PoolClient, name: string): Promise<number> {
  const inserted = await client.query<{ id: number }>(
    'INSERT INTO tenants (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id',
    [name],
  );
  if (inserted.rows[0] !== undefined) {
    const id = inserted.rows[0].id;
    // The tenant's own server id sequence (migration 3), made here rather than at its first commit.
    await client.query(`CREATE SEQUENCE IF NOT EXISTS event_seq_t${id} AS bigint INCREMENT BY ${SEQ_BLOCK}`);
    return id;
  }
  // The conflicting row is committed (ON CONFLICT waited for it), so a new statement sees it.
  const existing = await client.query<{ id: number }>('SELECT id FROM tenants WHERE name = $1', [name]);
  if (existing.rows[0] === undefined) throw new Error(`tenant ${name} vanished`);
  return existing.rows[0].id;
}

class PostgresQuarantineStore implements QuarantineStore {
  constructor(private readonly pool: Pool) {}

  async list(query: QuarantineQuery): Promise<QuarantineEntry[]> {
    const { rows } = await guarded(() =>
      this.pool.query<QuarantineRow>(
        `SELECT ${QUARANTINE_COLUMNS} FROM quarantine q LEFT JOIN tenants t ON t.id = q.tenant_id
         WHERE ($1::integer IS NULL OR q.tenant_id = $1) AND q.id > $2 AND ($5::bigint IS NULL OR q.id < $5) AND ($3 OR q.replayed_at IS NULL)
         ORDER BY q.id${query.newestFirst ? ' DESC' : ''} LIMIT $4`,
        [query.tenantId ?? null, query.newestFirst ? 0 : (query.afterId ?? 0), query.includeReplayed, query.limit, query.newestFirst ? (query.beforeId ?? null) : null],
      ),
    );
    return rows.map(toQuarantineEntry);
  }

  async get(id: number): Promise<QuarantineEntry | undefined> {
    const { rows } = await guarded(() =>
      this.pool.query<QuarantineRow>(
        `SELECT ${QUARANTINE_COLUMNS} FROM quarantine q LEFT JOIN tenants t ON t.id = q.tenant_id WHERE q.id = $1`,
        [id],
      ),
    );
    return rows[0] === undefined ? undefined : toQuarantineEntry(rows[0]);
  }

  async countSince(tenantId: number, since: number): Promise<number> {
    // Ids grow with time: the first id of the period bounds the tenant's index range.
    const { rows } = await guarded(() =>
      this.pool.query<{ n: string }>(
        'SELECT count(*) AS n FROM quarantine WHERE tenant_id = $1 AND id >= (SELECT coalesce(min(id), 9223372036854775807) FROM quarantine WHERE received_at >= $2)',
        [tenantId, since],
      ),
    );
    return Number(rows[0]!.n);
  }

  async purgeBefore(before: number): Promise<number> {
    const result = await guarded(() => this.pool.query('DELETE FROM quarantine WHERE received_at < $1', [before]));
    return result.rowCount ?? 0;
  }
}
