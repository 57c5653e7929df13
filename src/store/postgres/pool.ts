/** A bounded pg pool with the settings every bucketmeter pool needs (the store's, the cost thread's). */
import { Pool } from 'pg';
import { throttledWarn, type WarnLogger } from '../../logging/throttle.js';

export function createPool(options: { url: string; max: number; connectTimeoutMs: number; logger?: WarnLogger | undefined }): Pool {
  const pool = new Pool({
    connectionString: options.url,
    max: options.max,
    connectionTimeoutMillis: options.connectTimeoutMs,
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
  const connectionLost = throttledWarn(options.logger);
  pool.on('error', (err) => connectionLost.warn({ err }, 'PostgreSQL connection lost; the pool reconnects on demand'));
  // The pool listens on idle clients only; a checked-out client whose socket dies also emits 'error'.
  // The query in flight (or the next one) rejects with it, which is where it is handled.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
