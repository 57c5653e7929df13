/**
 * Which node runs the background jobs (quarantine purge; rollups later): the one holding a session
 * advisory lock, on a connection of its own outside the pool. When that node stops or its session
 * dies, PostgreSQL releases the lock and the next node to ask takes it over.
 */
import pg from 'pg';
import { throttledWarn, type WarnLogger } from '../../logging/throttle.js';
import type { JobOwnership } from '../types.js';
import { LOCK_CLASS } from './migrate.js';

const LOCK_JOBS = 4;

export class PgJobOwnership implements JobOwnership {
  #client: pg.Client | undefined;
  #closed = false;

  // Asked four times a second while the store is down; one throttle per warning, so that a burst of
  // one does not hide the other.
  readonly #lockLost: WarnLogger;
  readonly #askFailed: WarnLogger;

  constructor(
    private readonly url: string,
    logger?: WarnLogger,
  ) {
    this.#lockLost = throttledWarn(logger);
    this.#askFailed = throttledWarn(logger);
  }

  async claimJobs(): Promise<boolean> {
    if (this.#closed) return false;
    if (this.#client !== undefined) {
      // Still ours only while the session that holds the lock is alive.
      try {
        await this.#client.query('SELECT 1');
        return true;
      } catch (err) {
        this.#lockLost.warn({ err }, 'lost the background-job lock connection; will try to claim the jobs again');
        this.#drop();
      }
    }
    const client = new pg.Client({ connectionString: this.url, application_name: 'bucketmeter-jobs', keepAlive: true });
    client.on('error', () => this.#client === client && this.#drop());
    try {
      await client.connect();
      const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [LOCK_CLASS, LOCK_JOBS]);
      if (rows[0]?.ok === true && !this.#closed) {
        this.#client = client;
        return true;
      }
    } catch (err) {
      this.#askFailed.warn({ err }, 'could not ask for the background-job lock; will try again');
    }
    await client.end().catch(() => {});
    return false;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  #drop(): void {
    const client = this.#client;
    this.#client = undefined;
    void client?.end().catch(() => {});
  }
}
