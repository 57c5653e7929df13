/**
 * The writer thread: owns the connection that commits, so the WAL fsync of every commit happens off
 * the main event loop. Requests are handled in the order they were sent. Commit requests that are
 * already waiting when a transaction starts join it (up to maxGroupEvents): the main thread hands
 * units over as soon as they are packed, and this thread never waits for a round trip while work is
 * queued, however large the backlog grows.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { ThreadConnection, connectionSettings, sqliteCode } from './connection.js';
import type { Connection, ConnectionSettings } from './connection.js';
import { FIELD_COLUMNS, PackedEvent } from './layout.js';
import type { PackedUnit } from './layout.js';
import { ObjectKeyIds, objectKeyHash, prepareObjectKeys } from './object-keys.js';
import type { TakenSums, WriterData, WriterRequest, WriterResponse, WriterResult } from './protocol.js';
import { SHAPES } from '../../usage/shapes.js';
import { UPSERT_RECEIPTS } from './usage-sql.js';
import { PendingSums, batchBuffers } from './usage-sums.js';
import { OUTBOX_ROW } from './inventory.js';
import { INVENTORY_ACTION_CODES } from '../../inventory/rows.js';

/** Beyond this many cached dictionary values the cache starts over (clientId can have many values). */
const DICT_CACHE_LIMIT = 200_000;

const FIXED_COLUMNS = ['seq', 'tseq', 'tenant', 'timestamp', 'received_after', 'action'];
const EVENT_COLUMNS = [...FIXED_COLUMNS, ...FIELD_COLUMNS];

/**
 * Events inserted per statement where a unit has that many in a row of one kind (with or without a
 * client eventId): each statement run costs the writer its call, bindings setup, result object and
 * reset (measured alone, 21 columns and the events indexes, SDK-like rows: 3.7 µs per event one row
 * at a time, 2.6 eight at a time, no better sixteen).
 */
const INSERT_ROWS = 8;

/**
 * OR ROLLBACK: a constraint the statement does not resolve itself ends the transaction (the commit
 * fails as a whole, as it did). Left at ABORT, a statement of several rows keeps a journal of its own
 * to undo just itself, a copy of every page it touches: where timestamps are spread (the reference
 * mix) that made eight-row inserts cost 9 µs per event instead of 6 (measured alone).
 */
const insertEvents = (rows: number) =>
  `INSERT OR ROLLBACK INTO events (${EVENT_COLUMNS.join(', ')}) VALUES ${Array.from({ length: rows }, () => `(${EVENT_COLUMNS.map(() => '?').join(', ')})`).join(', ')}`;
/** A duplicate (tenant, event_id), stored earlier or earlier in the same statement, inserts nothing. */
const ONCE = ' ON CONFLICT (tenant, event_id) WHERE event_id IS NOT NULL DO NOTHING';

function prepare(db: Connection) {
  return {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    // Rewrites a row unchanged: a real write, so the probe goes through the WAL append and fsync.
    probe: db.prepare("UPDATE counters SET value = value WHERE name = 'event_seq'"),
    lastSeq: db.prepare("SELECT value FROM counters WHERE name = 'event_seq'").pluck(),
    setLastSeq: db.prepare("UPDATE counters SET value = ? WHERE name = 'event_seq'"),
    tenantSeq: db.prepare('SELECT value FROM tenant_seqs WHERE tenant = ?').pluck(),
    setTenantSeq: db.prepare('INSERT INTO tenant_seqs (tenant, value) VALUES (?, ?) ON CONFLICT (tenant) DO UPDATE SET value = excluded.value'),
    dictFind: db.prepare('SELECT id FROM dict WHERE value = ?').pluck(),
    dictAdd: db.prepare('INSERT INTO dict (value) VALUES (?)'),
    objectKeys: prepareObjectKeys(db),
    insert: db.prepare(insertEvents(1)),
    insertOnce: db.prepare(insertEvents(1) + ONCE),
    insertRows: db.prepare(insertEvents(INSERT_ROWS)),
    insertRowsOnce: db.prepare(insertEvents(INSERT_ROWS) + ONCE),
    // Takes back a multi-row insert that met a duplicate, so that its events go in one at a time.
    deleteSeqs: db.prepare('DELETE FROM events WHERE seq > ? AND seq <= ?'),
    quarantineAdd: db.prepare(
      `INSERT INTO quarantine (tenant, received_at, code, errors, source, batch_index, body, truncated)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    // The first replay's time is kept.
    replayed: db.prepare('UPDATE quarantine SET replayed_at = ? WHERE id = ? AND replayed_at IS NULL'),
    purgeQuarantine: db.prepare('DELETE FROM quarantine WHERE received_at < ?'),
    receipts: db.prepare(UPSERT_RECEIPTS),
    inventoryOutbox: db.prepare(OUTBOX_ROW),
  };
}

type Statements = ReturnType<typeof prepare>;

class Writer {
  readonly #conn: ThreadConnection<Statements>;
  /** value → id of committed dictionary rows only (see commit's rollback handling). */
  readonly #dict = new Map<string, number>();
  /** Made at the first open: its hash is keyed with the database's secret. */
  #objectKeys: ObjectKeyIds | undefined;
  /**
   * The insert's parameters, rewritten for each event. Passed spread, as arguments: better-sqlite3
   * binds those directly, and an array's elements through one property lookup each (measured: 0.6 µs
   * more per 21-column insert).
   */
  readonly #args = new Array<unknown>(EVENT_COLUMNS.length);
  /** The same for INSERT_ROWS events, one after the other. */
  readonly #rows = new Array<unknown>(EVENT_COLUMNS.length * INSERT_ROWS);
  readonly #event = new PackedEvent();
  /** The stored events' usage, summed per shape as they are inserted, for the derived thread's fold. */
  readonly #sums: PendingSums;

  constructor(private readonly data: WriterData) {
    this.#sums = new PendingSums(EVENT_COLUMNS, SHAPES, data.usageSumRows);
    this.#conn = new ThreadConnection(data.path, data.busyTimeoutMs, (db) => {
      // 8 MiB: a larger cache (32 MiB was measured) saved no throughput in the bench but kept the
      // process RSS growing for as long as the database grew.
      db.pragma('cache_size = -8192');
      // A unit dirties index pages all over the file. Checkpointing every 10,000 pages (40 MB) rather
      // than 1,000 copies each page to the database once for many commits instead of every few, and
      // this thread is the only one that checkpoints. The WAL file is cut back to 64 MB after a reset.
      db.pragma('wal_autocheckpoint = 10000');
      db.pragma('journal_size_limit = 67108864');
      const statements = prepare(db);
      this.#objectKeys ??= new ObjectKeyIds(objectKeyHash(db));
      return statements;
    });
  }

  /**
   * Commits the units in one transaction: all of them, or none. Per unit and event: 0 for a
   * duplicate, else the number of its server id (its tenant's tseq) when it has no client eventId,
   * else its seq.
   */
  commit(units: readonly PackedUnit[]): Float64Array<ArrayBuffer>[] {
    const usage = this.data.usage !== false;
    const events = units.reduce((n, unit) => n + unit.count, 0);
    const s = this.#conn.open();
    const objectKeys = this.#objectKeys!;
    if (this.#dict.size > DICT_CACHE_LIMIT) this.#dict.clear();
    objectKeys.trim();
    const seqs = units.map((unit) => new Float64Array(unit.count));
    // Dictionary values and object keys first inserted by this transaction: their ids vanish if it rolls back.
    const added: string[] = [];
    const addedKeys: string[] = [];
    try {
      s.begin.run();
      const first = s.lastSeq.get() as number;
      let seq = first;
      // tenant → last tseq handed out, read once per transaction and written back before COMMIT.
      const tseqs = new Map<number, number>();
      const receipts = usage ? new Receipts() : undefined;
      const feed = usage && this.data.inventory !== false ? new InventoryFeed() : undefined;
      const sums = usage ? this.#sums : undefined;
      sums?.begin(first, events);
      for (let u = 0; u < units.length; u++) seq = this.#insert(s, units[u]!, seqs[u]!, seq, tseqs, added, addedKeys, receipts, sums, feed);
      s.setLastSeq.run(seq);
      for (const [tenant, value] of tseqs) s.setTenantSeq.run(tenant, value);
      if (receipts !== undefined) {
        // Receipts change in the transaction of the events they count (one row per tenant and day);
        // the rollups are folded after commit, on the derived thread, from the seqs past the usage cursor.
        receipts.write(s.receipts);
        // The inventory's feed: written with the events, applied by the derived thread.
        feed?.write(s.inventoryOutbox);
      }
      s.commit.run();
      sums?.committed(first, seq);
      return seqs;
    } catch (err) {
      // What it summed is in the sums: the seqs they cover are folded from the events.
      this.#sums.drop();
      for (const value of added) this.#dict.delete(value);
      objectKeys.forget(addedKeys);
      this.#conn.reset();
      throw err;
    }
  }

  /**
   * Inserts one unit's events, numbered on from `seq`, writing each one's seq into `seqs` (0 for a
   * duplicate), then its quarantine entries and replay marks. Returns the last seq handed out.
   */
  #insert(
    s: Statements,
    unit: PackedUnit,
    seqs: Float64Array,
    seq: number,
    tseqs: Map<number, number>,
    added: string[],
    addedKeys: string[],
    receipts: Receipts | undefined,
    sums: PendingSums | undefined,
    feed: InventoryFeed | undefined,
  ): number {
    const dictIds = unit.values.map((value) => this.#dictId(s, value, added));
    const event = this.#event;
    const objectKeyId = (key: string) => this.#objectKeys!.id(s.objectKeys, key, addedKeys);
    const withId = (i: number) => event.at(unit, i).text('eventId') !== null;
    /** Event i's columns into `args` from `at`; its seq `seq`. */
    const fill = (i: number, args: unknown[], at: number, seq: number, hasEventId: boolean) => {
      event.at(unit, i);
      const timestamp = event.timestamp;
      args[at] = seq;
      args[at + 1] = hasEventId ? null : this.#nextTenantSeq(s, tseqs, event.tenantId);
      args[at + 2] = event.tenantId;
      args[at + 3] = timestamp;
      args[at + 4] = event.receivedAt - timestamp;
      args[at + 5] = event.actionCode;
      event.writeColumns(args, at + FIXED_COLUMNS.length, dictIds, objectKeyId);
    };
    /** Stored (`id`: its seq or tseq) or a duplicate (0): its outcome counted. */
    const stored = (i: number, id: number, args: unknown[], at: number) => {
      seqs[i] = id;
      event.at(unit, i);
      if (id !== 0) {
        sums?.add(args, at);
        // Its seq from its insert: `id` is its tseq when it has no client eventId.
        feed?.add(event.tenantId, event.timestamp, args[at] as number, event.actionCode);
      }
      receipts?.add(event.tenantId, event.receivedAt, id === 0 ? DUPLICATE : STORED);
    };
    const one = (i: number) => {
      const args = this.#args;
      const hasEventId = withId(i);
      fill(i, args, 0, seq + 1, hasEventId);
      if (!hasEventId) {
        s.insert.run(...args);
        ++seq;
        stored(i, args[1] as number, args, 0);
      } else stored(i, s.insertOnce.run(...args).changes === 1 ? ++seq : 0, args, 0);
    };
    const n = EVENT_COLUMNS.length;
    let i = 0;
    while (i < unit.count) {
      const hasEventId = withId(i);
      let run = 1;
      while (run < INSERT_ROWS && i + run < unit.count && withId(i + run) === hasEventId) run++;
      if (run < INSERT_ROWS) {
        for (const end = i + run; i < end; i++) one(i);
        continue;
      }
      const rows = this.#rows;
      for (let k = 0; k < INSERT_ROWS; k++) fill(i + k, rows, k * n, seq + 1 + k, hasEventId);
      if (!hasEventId) s.insertRows.run(...rows);
      else if (s.insertRowsOnce.run(...rows).changes !== INSERT_ROWS) {
        // A duplicate among them (a resent event): which one, and dense seqs, one at a time.
        s.deleteSeqs.run(seq, seq + INSERT_ROWS);
        for (const end = i + INSERT_ROWS; i < end; i++) one(i);
        continue;
      }
      for (let k = 0; k < INSERT_ROWS; k++) stored(i + k, hasEventId ? seq + 1 + k : (rows[k * n + 1] as number), rows, k * n);
      seq += INSERT_ROWS;
      i += INSERT_ROWS;
    }
    for (const q of unit.quarantine) {
      receipts?.add(q.tenantId, q.receivedAt, REJECTED);
      const body = Buffer.from(q.body.buffer, q.body.byteOffset, q.body.byteLength);
      s.quarantineAdd.run(q.tenantId, q.receivedAt, q.code, q.errors, q.source, q.index, body, q.truncated ? 1 : 0);
    }
    if (unit.replayed !== null) {
      for (const id of unit.replayed.ids) s.replayed.run(unit.replayed.at, id);
    }
    return seq;
  }

  /** The tenant's next server id number, counted in `tseqs` for this transaction. */
  #nextTenantSeq(s: Statements, tseqs: Map<number, number>, tenant: number): number {
    const next = (tseqs.get(tenant) ?? ((s.tenantSeq.get(tenant) as number | undefined) ?? 0)) + 1;
    tseqs.set(tenant, next);
    return next;
  }

  /** A tiny durable write: the lock can be taken, and the file written and synced. */
  check(): null {
    const s = this.#conn.open();
    try {
      s.begin.run();
      s.probe.run();
      s.commit.run();
      return null;
    } catch (err) {
      this.#conn.reset();
      throw err;
    }
  }

  /**
   * The usage sums kept since the last take, for the derived thread to fold, and the last seq stored:
   * the sums cover up to it when they cover the run since the last take, so a fold to it is one step.
   */
  takeSums(): TakenSums {
    const s = this.#conn.open();
    return { sums: this.#sums.take(), stored: s.lastSeq.get() as number };
  }

  /** Whether to ask the store for a fold of the sums now (once per run of them). */
  foldDue(): boolean {
    return this.#sums.foldDue();
  }

  purgeQuarantine(before: number): number {
    const s = this.#conn.open();
    try {
      return s.purgeQuarantine.run(before).changes;
    } catch (err) {
      this.#conn.reset();
      throw err;
    }
  }

  settings(): ConnectionSettings {
    this.#conn.open();
    return connectionSettings(this.#conn.db);
  }

  close(): null {
    this.#conn.reset();
    return null;
  }

  #dictId(s: Statements, value: string, added: string[]): number {
    let id = this.#dict.get(value);
    if (id === undefined) {
      id = s.dictFind.get(value) as number | undefined;
      if (id === undefined) {
        id = Number(s.dictAdd.run(value).lastInsertRowid);
        added.push(value);
      }
      this.#dict.set(value, id);
    }
    return id;
  }
}

const STORED = 1;
const DUPLICATE = 2;
const REJECTED = 3;

/** A transaction's receipts per tenant and UTC day of arrival: [received, stored, duplicates, rejected]. */
class Receipts {
  readonly #days = new Map<string, number[]>();
  /** The last tenant and day counted, and their counts: a unit's events share them (no key made per event). */
  #tenant = -1;
  #day = -1;
  #counts: number[] = [];

  add(tenantId: number, receivedAt: number, outcome: typeof STORED | typeof DUPLICATE | typeof REJECTED): void {
    const day = Math.floor(receivedAt / 86400);
    if (tenantId !== this.#tenant || day !== this.#day) {
      const key = `${tenantId}/${day}`;
      let counts = this.#days.get(key);
      if (counts === undefined) {
        counts = [0, 0, 0, 0];
        this.#days.set(key, counts);
      }
      this.#tenant = tenantId;
      this.#day = day;
      this.#counts = counts;
    }
    this.#counts[0]!++;
    this.#counts[outcome]!++;
  }

  write(upsert: Statements['receipts']): void {
    for (const [key, [received, stored, duplicates, rejected]] of this.#days) {
      const [tenant, day] = key.split('/');
      upsert.run(Number(tenant), Number(day), received, stored, duplicates, rejected);
    }
  }
}

const INVENTORY_ACTION = new Set(INVENTORY_ACTION_CODES);

/**
 * A transaction's inventory events per tenant (earliest timestamp, first and last seq), counted while
 * they are inserted: reading them back by seq range cost the writer about a microsecond per event.
 */
class InventoryFeed {
  readonly #tenants = new Map<number, [fromTs: number, firstSeq: number, lastSeq: number]>();

  add(tenantId: number, timestamp: number, seq: number, action: number): void {
    if (!INVENTORY_ACTION.has(action)) return;
    const row = this.#tenants.get(tenantId);
    if (row === undefined) this.#tenants.set(tenantId, [timestamp, seq, seq]);
    else {
      if (timestamp < row[0]) row[0] = timestamp;
      // Seqs are handed out in order within a transaction.
      row[2] = seq;
    }
  }

  write(insert: Statements['inventoryOutbox']): void {
    for (const [tenant, [fromTs, firstSeq, lastSeq]] of this.#tenants) insert.run(tenant, fromTs, firstSeq, lastSeq);
  }
}

type CommitRequest = Extract<WriterRequest, { type: 'commit' }>;
type OtherRequest = Exclude<WriterRequest, CommitRequest>;

function handle(writer: Writer, request: OtherRequest): WriterResult {
  switch (request.type) {
    case 'check':
      return writer.check();
    case 'purgeQuarantine':
      return writer.purgeQuarantine(request.before);
    case 'settings':
      return writer.settings();
    case 'takeSums':
      return writer.takeSums();
    case 'close':
      return writer.close();
  }
}

const port = parentPort!;
const data = workerData as WriterData;
const writer = new Writer(data);

function answer(id: number, run: () => WriterResult, foldSums = false): void {
  let response: WriterResponse;
  try {
    response = { id, ok: true, result: run() };
    if (foldSums) response.foldSums = true;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    response = { id, ok: false, error: { message, code: sqliteCode(err) } };
  }
  port.postMessage(response, transferOf(response));
}

/** What an answer's arrays are: seqs, or the usage sums (moved, not copied). */
function transferOf(response: WriterResponse): ArrayBuffer[] {
  if (!response.ok || response.result === null || typeof response.result !== 'object') return [];
  if (response.result instanceof Float64Array) return [response.result.buffer];
  return 'stored' in response.result && response.result.sums !== null ? batchBuffers(response.result.sums) : [];
}

/** The group's units committed together; each request is answered with its own seqs, or the shared failure. */
function commitGroup(group: CommitRequest[]): void {
  let seqs: Float64Array<ArrayBuffer>[] | undefined;
  let failure: unknown;
  try {
    seqs = writer.commit(group.map((request) => request.unit));
  } catch (err) {
    failure = err;
  }
  // Asked on the group's first answer: the store starts a fold at once rather than at its next timer.
  const foldSums = writer.foldDue();
  for (const [i, request] of group.entries()) {
    answer(
      request.id,
      () => {
        if (seqs === undefined) throw failure;
        return seqs[i]!;
      },
      foldSums && i === 0,
    );
  }
}

/** Now, on the clock of the deadlines the main thread sends (performance.timeOrigin is per thread). */
const epochNow = () => performance.timeOrigin + performance.now();

port.on('message', (first: WriterRequest) => {
  let next: WriterRequest | undefined = first;
  while (next !== undefined) {
    const request: WriterRequest = next;
    next = undefined;
    if (request.type !== 'commit') {
      answer(request.id, () => handle(writer, request));
      break;
    }
    const group = [request];
    let events = request.unit.count;
    // Taken off the port here, so each is handled in this loop: it joins the group, starts the next
    // one (when it would take the group past its limit), or follows it.
    for (;;) {
      next = receiveMessageOnPort(port)?.message as WriterRequest | undefined;
      if (next?.type !== 'commit' || events + next.unit.count > data.maxGroupEvents) break;
      group.push(next);
      events += next.unit.count;
      next = undefined;
    }
    // A unit whose caller has been answered 503 meanwhile is refused, not written after the fact.
    const now = epochNow();
    const due: CommitRequest[] = [];
    for (const r of group) {
      if (r.deadline >= now) due.push(r);
      else answer(r.id, () => { throw new Error('the unit waited for the writer past its deadline; not written'); });
    }
    if (due.length > 0) commitGroup(due);
  }
});
