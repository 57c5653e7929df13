/**
 * The derived thread: owns the connection that writes the derived file (derived.ts): the usage
 * rollups and the object inventory. It opens the derived file as main and attaches the events file, which it
 * only reads: its transactions are plain BEGIN (BEGIN IMMEDIATE would take the events file's write
 * lock too), so a fold or a catch-up never holds the events writer; the one write it makes there (the
 * applied outbox rows deleted) is a short transaction of its own. Requests are handled in the order
 * they were sent.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ThreadConnection, sqliteCode } from './connection.js';
import type { Connection } from './connection.js';
import type { DerivedData, DerivedRequest, WriterResponse, WriterResult } from './protocol.js';
import { SHAPES, shapeRange } from '../../usage/shapes.js';
import { CLEAR_STAGE, CREATE_STAGE, UNFOLDED, rollupFromStage, stageFromEvents } from './usage-sql.js';
import { MAX_SUM_ROWS, prepareUpserts, writeBatch } from './usage-sums.js';
import type { SumsBatch } from './usage-sums.js';
import { EVENTS_DB, derivedPath } from './derived.js';
import { InventoryWriter } from './inventory.js';
import { INVENTORY_MORE } from './protocol.js';
import { countRebuildSql, EVERY_TENANT } from '../rebuilds.js';
import type { RebuildKind } from '../rebuilds.js';

/**
 * Most events one fold from the events takes: a chunk is one transaction of the derived file (commits
 * do not wait for it), its stage bounded; over a backlog, chunks this size still compress steady
 * traffic (coarse shapes especially).
 */
const FOLD_CHUNK_EVENTS = 10_000;

/** Least time between two deletes of applied outbox rows (each a write transaction of the events file). */
const PURGE_MS = 5000;

/**
 * Most rows of sums the derived thread keeps (~100 bytes each): as many as the writer may hold, a few
 * of its batches (it asks for a fold at a quarter of that).
 */
const KEPT_SUM_ROWS = MAX_SUM_ROWS;

function prepare(db: Connection) {
  db.exec(CREATE_STAGE);
  return {
    // Deferred: the derived file's write lock is taken at the first write, the events file's never.
    begin: db.prepare('BEGIN'),
    commit: db.prepare('COMMIT'),
    lastSeq: db.prepare(`SELECT value FROM ${EVENTS_DB}.counters WHERE name = 'event_seq'`).pluck(),
    usageCursor: db.prepare("SELECT value FROM main.derived_counters WHERE name = 'usage_seq'").pluck(),
    // The derived file's write lock (the cursor's row rewritten unchanged), then the cursor read under
    // it: another process's derived thread (`usage verify` or `rebuild` beside the server) may have
    // folded since this one last read it. The events file's lock is not taken.
    lockCursor: db.prepare("UPDATE main.derived_counters SET value = value WHERE name = 'usage_seq' RETURNING value").pluck(),
    // The same for the inventory: its pending rows are read under the lock, not in a read transaction
    // that could not wait for another process's catch-up and would fail once that one committed.
    lockApplied: db.prepare("UPDATE main.derived_counters SET value = value WHERE name = 'inventory_outbox_id'"),
    rollback: db.prepare('ROLLBACK'),
    setUsageCursor: db.prepare("UPDATE main.derived_counters SET value = ? WHERE name = 'usage_seq'"),
    // A fold takes the seqs after the cursor up to the chunk's end.
    stageFold: db.prepare(stageFromEvents('seq > ? AND seq <= ?', false)),
    upserts: prepareUpserts(db, SHAPES),
    rollups: SHAPES.map((shape) => db.prepare(rollupFromStage(shape))),
    clearStage: db.prepare(CLEAR_STAGE),
    rebuildDelete: SHAPES.map((shape) => db.prepare(`DELETE FROM ${shape.table} WHERE (@tenant IS NULL OR tenant = @tenant) AND ${shape.grain} >= @from AND ${shape.grain} < @to`)),
    // Only what is folded: the events past the cursor are added by their fold.
    stageRebuild: db.prepare(stageFromEvents(`(@tenant IS NULL OR tenant = @tenant) AND timestamp >= @fromSecond AND timestamp < @toSecond AND NOT ${UNFOLDED}`, true)),
    rebuildInsert: SHAPES.map((shape) => db.prepare(rollupFromStage(shape, 'hour >= @fromHour AND hour < @toHour'))),
    countRebuild: db.prepare(countRebuildSql('?', '?')),
    inventory: new InventoryWriter(db),
  };
}

type Statements = ReturnType<typeof prepare>;

class Derived {
  readonly #conn: ThreadConnection<Statements>;
  /** The writer's sums received and not folded yet, by their first seq: each is folded once the cursor reaches it. */
  #batches: SumsBatch[] = [];
  /** When applied outbox rows were last deleted (epoch ms). */
  #purged = 0;

  constructor(private readonly data: DerivedData) {
    this.#conn = new ThreadConnection(derivedPath(data.path), data.busyTimeoutMs, (db) => {
      db.prepare(`ATTACH DATABASE ? AS ${EVENTS_DB}`).run(data.path);
      db.pragma('cache_size = -8192');
      return prepare(db);
    });
  }

  /**
   * Folds past the usage cursor, up to seq `upTo` (at most the last seq stored): the sums received
   * that start at the cursor (all of them that follow on, however far past the goal: their events
   * are committed), else the events up to the next sums received, at most FOLD_CHUNK_EVENTS of them.
   * The rollups and the cursor move in one transaction: a crash leaves both or neither. Returns the
   * goal while some seqs before it remain, null once the cursor has reached it.
   */
  foldUsage(upTo: number, sums: SumsBatch | null): number | null {
    // The bench's "usage off": nothing is folded, as nothing was counted.
    if (this.data.usage === false) return null;
    if (sums !== null) this.#keep(sums);
    const s = this.#conn.open();
    const goal = Math.min(upTo, s.lastSeq.get() as number);
    // Nothing to fold (a read's usual case): no lock, no transaction.
    if (!this.#pending(s.usageCursor.get() as number, goal)) return null;
    let to: number;
    try {
      s.begin.run();
      const cursor = s.lockCursor.get() as number;
      if (!this.#pending(cursor, goal)) {
        s.rollback.run();
        return null;
      }
      const first = this.#batches[0];
      to = cursor;
      for (const batch of this.#batches) {
        if (batch.from !== to) break;
        writeBatch(batch, s.upserts);
        to = batch.to;
      }
      if (to === cursor) {
        to = Math.min(goal, cursor + FOLD_CHUNK_EVENTS, first?.from ?? Infinity);
        s.stageFold.run(cursor, to);
        for (const rollup of s.rollups) rollup.run();
        s.clearStage.run();
      }
      s.setUsageCursor.run(to);
      s.commit.run();
    } catch (err) {
      this.#conn.reset();
      throw err;
    }
    this.#batches = this.#batches.filter((b) => b.from >= to);
    return to < goal ? goal : null;
  }

  /**
   * Keeps sums received for their fold, within KEPT_SUM_ROWS: while folds fail (the derived file's
   * disk full, read-only, or locked by a long rebuild) every catch-up hands more over. Sums not kept
   * leave their seqs to a fold from the events.
   */
  #keep(sums: SumsBatch): void {
    const rows = (batch: SumsBatch) => batch.shapes.reduce((n, shape) => n + shape.rows, 0);
    if (this.#batches.reduce((n, batch) => n + rows(batch), rows(sums)) <= KEPT_SUM_ROWS) this.#batches.push(sums);
  }

  /**
   * Keeps the sums received that the cursor has not passed, in order, and says whether there is a
   * fold to do: seqs before the goal, or sums starting at the cursor (their events are committed).
   * Sums of seqs the cursor has passed are of no more use (it may have passed part of them only: a
   * fold from the events taken up to the last seq stored while the writer went on summing).
   */
  #pending(cursor: number, goal: number): boolean {
    this.#batches = this.#batches.filter((b) => b.from >= cursor).sort((a, b) => a.from - b.from);
    return cursor < goal || this.#batches[0]?.from === cursor;
  }

  /**
   * Recomputes the rollups of hours [fromHour, toHour) from the events, in one transaction on this
   * thread: no fold can run between the delete and the refill, so ingestion may go on meanwhile.
   * The rebuild is counted in it: a process keeping answers sees the new rows and the new count together.
   */
  rebuildUsage(tenantId: number | null, fromHour: number, toHour: number): null {
    const s = this.#conn.open();
    try {
      // A day shape's whole days: a day row cannot be refilled in part. Each shape's range lies within
      // the widest one, which is staged once.
      const ranges = SHAPES.map((shape) => shapeRange(shape, fromHour, toHour));
      s.begin.run();
      // The lock before the stage reads the cursor: a read transaction cannot wait for the lock, and
      // fails if another process's fold committed since it began.
      s.lockCursor.get();
      s.stageRebuild.run({ tenant: tenantId, fromSecond: Math.min(...ranges.map((r) => r.fromSecond)), toSecond: Math.max(...ranges.map((r) => r.toSecond)) });
      for (let i = 0; i < SHAPES.length; i++) {
        const { from, to, fromSecond, toSecond } = ranges[i]!;
        s.rebuildDelete[i]!.run({ tenant: tenantId, from, to });
        s.rebuildInsert[i]!.run({ fromHour: fromSecond / 3600, toHour: toSecond / 3600 });
      }
      s.countRebuild.run(tenantId ?? EVERY_TENANT, 'usage' satisfies RebuildKind);
      s.clearStage.run();
      s.commit.run();
      return null;
    } catch (err) {
      this.#conn.reset();
      throw err;
    }
  }

  /**
   * One transaction of the derived file. A catch-up is one step (MORE: call again), so that folds go
   * on between steps and its heap stays bounded. A rebuild or verify first applies every outbox row
   * of its snapshot, so that it reads the events of exactly the rows applied.
   */
  inventoryWork(op: 'catchUp' | 'rebuild' | 'verify', tenantId: number | null, upTo: number): string | null {
    const s = this.#conn.open();
    // Nothing pending (the usual case for a read): no transaction, so no fsync.
    if (op === 'catchUp' && !s.inventory.pending()) return null;
    let result: string | null = null;
    try {
      s.begin.run();
      s.lockApplied.run();
      if (op === 'catchUp') result = s.inventory.catchUp(upTo, this.data.catchUpSpan) ? INVENTORY_MORE : null;
      else {
        const newest = s.inventory.newest();
        while (s.inventory.catchUp(newest, this.data.catchUpSpan));
        if (op === 'rebuild') {
          s.inventory.rebuild(tenantId);
          s.countRebuild.run(tenantId ?? EVERY_TENANT, 'inventory' satisfies RebuildKind);
        } else result = JSON.stringify(s.inventory.verify(tenantId));
      }
      s.commit.run();
    } catch (err) {
      this.#conn.reset();
      throw err;
    }
    this.#purge(s);
    return result;
  }

  /**
   * The applied outbox rows deleted from the events file, at most once per PURGE_MS: each is a write
   * transaction of the events file (its lock and fsync), and rows left a while are only skipped.
   */
  #purge(s: Statements): void {
    const now = Date.now();
    if (now - this.#purged < PURGE_MS) return;
    this.#purged = now;
    try {
      s.inventory.purge();
    } catch {
      // Left for the next purge: applied rows are skipped by every reader of the outbox.
    }
  }

  open(): null {
    this.#conn.open();
    return null;
  }

  close(): null {
    this.#conn.reset();
    return null;
  }
}

function handle(derived: Derived, request: DerivedRequest): WriterResult {
  switch (request.type) {
    case 'open':
      return derived.open();
    case 'foldUsage':
      return derived.foldUsage(request.upTo, request.sums);
    case 'rebuildUsage':
      return derived.rebuildUsage(request.tenantId, request.fromHour, request.toHour);
    case 'inventory':
      return derived.inventoryWork(request.op, request.tenantId, request.upTo ?? Number.MAX_SAFE_INTEGER);
    case 'close':
      return derived.close();
  }
}

const port = parentPort!;
const derived = new Derived(workerData as DerivedData);

port.on('message', (request: DerivedRequest) => {
  let response: WriterResponse;
  try {
    response = { id: request.id, ok: true, result: handle(derived, request) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    response = { id: request.id, ok: false, error: { message, code: sqliteCode(err) } };
  }
  port.postMessage(response);
});
