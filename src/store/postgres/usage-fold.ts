/**
 * PostgreSQL's usage folding: the rollups are derived after commit from usage_outbox (usage-sql.ts),
 * by whichever process asks (the job owner in the background, any node before a read), one at a time
 * across every node: a session advisory lock, then a transaction whose snapshot is taken after it, so
 * each sees the outbox rows the one before it deleted. A fold adds a batch of rows' events to the
 * rollups and deletes exactly those rows in one statement: each row is folded once, and a commit not
 * yet visible leaves its row for a later fold, whatever the order in which transactions commit.
 */
import type { Pool, PoolClient } from 'pg';
import { SHAPES, shapeRange } from '../../usage/shapes.js';
import { FoldBacklogError, type UsageLag } from '../types.js';
import { byDeadline } from '../deadline.js';
import { serialized } from './serialized.js';
import { IDLE_MS } from '../background-pace.js';
import { FOLD_SQL, rollupSql } from './usage-sql.js';
import { countRebuildSql, EVERY_TENANT } from '../rebuilds.js';
import type { RebuildKind } from '../rebuilds.js';

const LOCK_USAGE = 6;

/**
 * Most events one fold takes: a bounded transaction, over ranges long enough to compress steady
 * traffic. A backlog costs less per event in larger chunks (each rollup row is updated once per chunk):
 * 100,000 events of the reference mix pending, folded in chunks of 20,000 took 1.6 s of PostgreSQL
 * CPU, in one chunk 0.8 s. A read behind a chunk waits for it (about a second at that size).
 */
export const FOLD_CHUNK_EVENTS = 100_000;

/**
 * While this process commits, the job owner's background fold runs at most this often. A fold costs
 * per rollup row it writes, and under steady ingest the rows grow slower than the events (the
 * client×day and feature×day shapes take about a row per event in 2,400 single events, 6,600 rows in
 * 8,000 of a batch): on the bench machine a fold took 29 µs of PostgreSQL CPU per event every 600 single
 * events (250 ms of them) and 19.5 every 2,400; 15.1 every 7,500 batch events and 11.4 every 30,000.
 * A read folds what is pending first: it pays for at most this much of them.
 */
export const BUSY_FOLD_MS = 1000;

/** Beyond any outbox id. */
const ALL = '9223372036854775807';

export class PostgresUsageFold {
  /** When the background fold last began (performance.now()). */
  #backgroundAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly pool: Pool,
    private readonly guarded: <T>(run: () => Promise<T>) => Promise<T>,
    /** When this process last committed events (performance.now()). */
    private readonly committedAt: () => number = () => Number.NEGATIVE_INFINITY,
  ) {}

  /**
   * The job owner's periodic call: catchUp, except while this process is still committing, where
   * the fold waits until BUSY_FOLD_MS after the last one. When commits pause it folds at once, so the
   * rollups catch up as soon as ingest stops; on a node that commits nothing (its job owner takes no
   * traffic) it folds at every call, as before.
   */
  async background(): Promise<void> {
    const now = performance.now();
    if (now - this.committedAt() < IDLE_MS && now - this.#backgroundAt < BUSY_FOLD_MS) return;
    this.#backgroundAt = now;
    await this.catchUp();
  }

  /**
   * Folds every outbox row committed before the call (and any others the folds meet on the way), a
   * batch per transaction; a read passes its deadline (epoch ms) and gives up there.
   */
  async catchUp(deadline = Number.POSITIVE_INFINITY): Promise<void> {
    // Nothing pending (the usual case for a read): no lock, no transaction. Every row committed
    // before this statement has an id at most its max.
    const { rows } = await this.guarded(() => this.pool.query<{ last: string | null }>('SELECT max(id)::text AS last FROM usage_outbox'));
    const last = rows[0]?.last ?? null;
    if (last === null) return;
    const backlog = () => new FoldBacklogError(`usage outbox rows up to id ${last} committed before this read are still being folded into the rollups`);
    const batch = () => this.#locked((c) => fold(c, last));
    // The first batch whatever the budget (as on SQLite, a read always folds one); the rest within it.
    for (let n = await batch(); n > 0; n = await byDeadline(batch(), deadline, backlog)) {
      // Past the deadline: done if that batch took the last rows (it still counted them), else refused.
      if (Date.now() > deadline) {
        if (await this.#pendingUpTo(last)) throw backlog();
        return;
      }
    }
  }

  async #pendingUpTo(last: string): Promise<boolean> {
    const { rows } = await this.guarded(() => this.pool.query<{ left: boolean }>('SELECT EXISTS (SELECT 1 FROM usage_outbox WHERE id <= $1) AS left', [last]));
    return rows[0]?.left === true;
  }

  /**
   * Recomputes the rollups of hours [fromHour, toHour) from the events. Under the fold lock and in one
   * snapshot: every outbox row it sees is folded first, so the events it refills from are exactly the
   * folded ones; those committed later keep their rows for a later fold. The rebuild is counted in
   * the same transaction: a process keeping answers sees the new rows and the new count together.
   */
  rebuild(tenantId: number | null, fromHour: number, toHour: number): Promise<void> {
    return this.#locked(async (c) => {
      while ((await fold(c, ALL)) > 0);
      for (const shape of SHAPES) {
        // A day shape's whole days: a day row cannot be refilled in part.
        const { from, to, fromSecond, toSecond } = shapeRange(shape, fromHour, toHour);
        await c.query(`DELETE FROM ${shape.table} WHERE ($1::integer IS NULL OR tenant = $1) AND ${shape.grain} >= $2 AND ${shape.grain} < $3`, [tenantId, from, to]);
        await c.query(rollupSql(shape, 'events', '($1::integer IS NULL OR tenant_id = $1) AND ts >= $2::bigint AND ts < $3::bigint'), [tenantId, fromSecond, toSecond]);
      }
      await c.query(countRebuildSql('$1', '$2'), [tenantId ?? EVERY_TENANT, 'usage' satisfies RebuildKind]);
    });
  }

  async lag(): Promise<UsageLag> {
    const { rows } = await this.guarded(() =>
      this.pool.query<[string, string]>({
        text: `SELECT coalesce(sum(last_seq - first_seq + 1), 0), coalesce(extract(epoch FROM now())::bigint - min(at), 0) FROM usage_outbox`,
        rowMode: 'array',
      }),
    );
    return { pendingEvents: Number(rows[0]![0]), oldestSeconds: Number(rows[0]![1]) };
  }

  /** One at a time across every node (serialized.ts). */
  #locked<T>(work: (c: PoolClient) => Promise<T>): Promise<T> {
    return this.guarded(() => serialized(this.pool, LOCK_USAGE, work));
  }
}

async function fold(c: PoolClient, upTo: string): Promise<number> {
  const { rows } = await c.query<{ n: number }>({ name: 'bm_usage_fold', text: FOLD_SQL, values: [upTo, FOLD_CHUNK_EVENTS] });
  return rows[0]!.n;
}
