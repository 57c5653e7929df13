/**
 * Reads whose caller left (README, "Reads whose client left") on PostgreSQL: a read is not begun
 * once its signal has aborted, and a query running when it aborts is cancelled with
 * pg_cancel_backend from another connection (pg has no cancel of its own).
 */
import { Client } from 'pg';
import type { Pool, QueryArrayConfig, QueryConfig, QueryResult } from 'pg';
import { ReadAbortedError } from '../types.js';

/** The backend's process id, which pg's client keeps (from BackendKeyData) but its types do not name. */
interface BackendOf {
  processID: number;
}

const aborted = (cause?: unknown) => new ReadAbortedError('the read was abandoned: its caller left', { cause });

export class CancellableReads {
  /** Reads abandoned before they began, and queries cancelled while they ran, since the store opened. */
  readonly abandoned = { waiting: 0, running: 0 };

  constructor(private readonly pool: Pool) {}

  /** Throws ReadAbortedError (counted) if the caller has left. */
  check(signal: AbortSignal | undefined): void {
    if (!signal?.aborted) return;
    this.abandoned.waiting++;
    throw aborted();
  }

  /**
   * On a connection of its own, not the pool's: the pool may be taken up by the very reads to cancel.
   * Best effort: a cancel that fails leaves the query to end by itself.
   */
  async #cancel(backend: number): Promise<void> {
    const canceller = new Client(this.pool.options);
    canceller.on('error', () => {});
    try {
      await canceller.connect();
      await canceller.query('SELECT pg_cancel_backend($1)', [backend]);
    } catch {
      // Not cancelled: the query ends by itself, its answer unread.
    } finally {
      await canceller.end().catch(() => {});
    }
  }

  /** `config` on a connection of its own when there is a signal, cancelled when it aborts. */
  async query<R>(config: QueryConfig | QueryArrayConfig, signal: AbortSignal | undefined): Promise<QueryResult<R & object>> {
    // Array rows or not, as `config` asks (pg's types split the two into overloads).
    if (signal === undefined) return this.pool.query(config as QueryConfig);
    this.check(signal);
    const client = await this.pool.connect();
    let cancelled = false;
    const cancel = () => {
      cancelled = true;
      this.abandoned.running++;
      void this.#cancel((client as unknown as BackendOf).processID);
    };
    try {
      this.check(signal);
      signal.addEventListener('abort', cancel, { once: true });
      return await client.query(config as QueryConfig);
    } catch (err) {
      throw cancelled ? aborted(err) : err;
    } finally {
      signal.removeEventListener('abort', cancel);
      // A cancel may land after its query ended: that connection takes no other query.
      client.release(cancelled);
    }
  }
}
