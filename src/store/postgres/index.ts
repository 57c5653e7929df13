/**
 * Opens the PostgreSQL store: a bounded pool, migrations (exactly once across processes), monthly
 * event partitions created ahead and re-checked periodically.
 */
import { Pool } from 'pg';
import { throttledWarn, type WarnLogger } from '../../logging/throttle.js';
import { StoreUnavailableError, type Store } from '../types.js';
import { migrate } from './migrate.js';
import { PgJobOwnership } from './jobs.js';
import { ensurePartitions } from './partitions.js';
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
  /** How long a usage read may fold a backlog before answering 503 (default FOLD_BEFORE_READ_MS). */
  foldBeforeReadMs?: number;
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
  const pool = new Pool({
    connectionString: options.url,
    max: options.poolMax ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    idleTimeoutMillis: 30_000,
    // Notices a dead peer on idle connections instead of finding out at the next commit.
    keepAlive: true,
    // A large unit's transaction spans several round trips (encode.ts) and holds its event_ids row
    // locks meanwhile. If this process dies or its network hangs mid-way, PostgreSQL ends the session
    // after this long instead of when TCP keepalive notices (hours), so retries on other nodes proceed.
    idle_in_transaction_session_timeout: 10_000,
    application_name: 'bucketmeter',
  });
  // An idle connection that dies (server restart, pg_terminate_backend) is reported here and already
  // removed by the pool; without a listener the 'error' event would crash the process.
  // When the server goes, every idle connection reports it at once.
  const connectionLost = throttledWarn(logger);
  pool.on('error', (err) => connectionLost.warn({ err }, 'PostgreSQL connection lost; the pool reconnects on demand'));
  // The pool listens on idle clients only; a checked-out client whose socket dies also emits 'error'.
  // The query in flight (or the next one) rejects with it, which is where it is handled.
  pool.on('connect', (client) => client.on('error', () => {}));

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
  return new PostgresStore(pool, options.copyMinEvents ?? COPY_MIN_EVENTS, jobs, () => {
    clearInterval(timer);
    closing ??= Promise.all([jobs.close(), pool.end()]).then(() => undefined);
    return closing;
  }, options.usage ?? true, options.foldBeforeReadMs);
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
