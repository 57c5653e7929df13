/** Derived-data work that must run one at a time across every node (usage folds, inventory catch-ups). */
import type { Pool, PoolClient } from 'pg';
import { LOCK_CLASS } from './migrate.js';

/** Per pool and lock, the last of this process's callers: they queue here, not each on a pooled connection. */
const queues = new WeakMap<Pool, Map<number, Promise<unknown>>>();

/**
 * A session advisory lock, then one REPEATABLE READ transaction (its snapshot taken after the lock).
 * Within a process, callers take turns before asking for a connection: reads that all fold a backlog
 * at once would otherwise hold every pooled connection waiting on the lock, and commits would get none.
 */
export function serialized<T>(pool: Pool, lock: number, work: (c: PoolClient) => Promise<T>): Promise<T> {
  let locks = queues.get(pool);
  if (locks === undefined) {
    locks = new Map();
    queues.set(pool, locks);
  }
  const turn = (locks.get(lock) ?? Promise.resolve()).then(() => locked(pool, lock, work));
  locks.set(lock, turn.catch(() => undefined));
  return turn;
}

async function locked<T>(pool: Pool, lock: number, work: (c: PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  // A session that may still hold the lock (its unlock or rollback could not be sent) is closed, which releases it.
  let broken = true;
  try {
    await c.query('SELECT pg_advisory_lock($1, $2)', [LOCK_CLASS, lock]);
    try {
      await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      const result = await work(c);
      await c.query('COMMIT');
      broken = false;
      return result;
    } catch (err) {
      await c.query('ROLLBACK').then(
        () => (broken = false),
        () => undefined,
      );
      throw err;
    } finally {
      await c.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS, lock]).catch(() => (broken = true));
    }
  } finally {
    c.release(broken);
  }
}
