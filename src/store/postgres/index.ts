/**
 * Opens the PostgreSQL store: a bounded pool, migrations (exactly once across processes), monthly
 * event partitions created ahead and re-checked periodically.
 */
import type { Pool } from 'pg';
import type { WarnLogger } from '../../logging/throttle.js';
import { StoreUnavailableError, type Store } from '../types.js';
import { migrate } from './migrate.js';
import { PgJobOwnership } from './jobs.js';
import { ensurePartitions } from './partitions.js';
import { createPool } from './pool.js';
import { checkedSpan } from '../inventory-step.js';
import { PostgresStore } from './store.js';

export interface PostgresStoreOptions {
  /** postgres://user:password@host:port/database */
  url: string;
  /** Most connections this process opens. Default 10. */
  poolMax?: number;
  /** How long to wait for a connection (new or from the pool) before failing. Default 5,000 ms. */
  connectTimeoutMs?: number;
  logger?: WarnLogger;
  /** Units of at least this many new events are written by COPY, smaller ones by one statement (encode.ts). Default 500. */
  copyMinEvents?: number;
  /** false only in the bench (ingest cost without usage); default true. */
  usage?: boolean;
  /** false only in the bench (ingest cost of the usage rollups alone): events are stored without the inventory's feed; default true. */
  inventory?: boolean;
  /** How long a usage read may fold a backlog before answering 503 (default FOLD_BEFORE_READ_MS). */
  foldBeforeReadMs?: number;
  /** Seqs of pending events one inventory catch-up step applies (default POSTGRES_CATCH_UP_SPAN; tests take small steps). */
  catchUpSpan?: number;
}

/**
 * Where COPY's round trips (five, against one) start to pay: on the bench machine, units of 100 to 300
 * events went faster by one statement and units of 1,000 or more by COPY.
 */
const COPY_MIN_EVENTS = 500;

/** Months of partitions kept ready beyond the current one. */
const MONTHS_AHEAD = 3;
const PARTITION_CHECK_MS = 6 * 60 * 60 * 1000;

export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const { logger } = options;
  const catchUpSpan = options.catchUpSpan === undefined ? undefined : checkedSpan(options.catchUpSpan);
  const pool = createPool({ url: options.url, max: options.poolMax ?? 10, connectTimeoutMs: options.connectTimeoutMs ?? 5000, logger });

  const maintainPartitions = async () => {
    try {
      await ensurePartitions(pool, Math.floor(Date.now() / 1000), MONTHS_AHEAD);
    } catch (err) {
      // Not fatal: rows outside existing partitions land in events_default; the next run retries.
      logger?.warn({ err }, 'could not create event partitions');
    }
  };

  try {
    const { unknown } = await migrate(pool);
    if (unknown.length > 0) {
      logger?.warn({ versions: unknown }, 'database has schema migrations this release does not know (newer release?)');
    }
  } catch (err) {
    await pool.end();
    throw new StoreUnavailableError(`PostgreSQL schema migration failed: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  await warnWithoutStatistics(pool, logger);
  await maintainPartitions();
  const timer = setInterval(() => void maintainPartitions(), PARTITION_CHECK_MS);
  timer.unref();

  const jobs = new PgJobOwnership(options.url, logger);
  let closing: Promise<void> | undefined;
  return new PostgresStore(pool, options.url, options.copyMinEvents ?? COPY_MIN_EVENTS, jobs, () => {
    clearInterval(timer);
    closing ??= Promise.all([jobs.close(), pool.end()]).then(() => undefined);
    return closing;
  }, options.usage ?? true, options.inventory ?? true, options.foldBeforeReadMs, catchUpSpan);
}

/**
 * Reads plan on table statistics, which autovacuum gathers (on by default). On a server with it off
 * nothing does: measured, one bucket's first page of /v1/objects over 1M versions took 108 ms instead
 * of 6. Said once at start, so that an operator knows to run ANALYZE.
 */
async function warnWithoutStatistics(pool: Pool, logger: WarnLogger | undefined): Promise<void> {
  const { rows } = await pool.query<{ autovacuum: string }>('SHOW autovacuum');
  if (rows[0]?.autovacuum === 'off') {
    logger?.warn({ autovacuum: 'off' }, 'PostgreSQL autovacuum is off: table statistics are not gathered and reads may be planned badly; run ANALYZE after large imports, or turn autovacuum on');
  }
}
