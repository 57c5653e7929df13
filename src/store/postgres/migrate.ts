/**
 * Applies the missing migrations exactly once, even when several processes start at the same time:
 * everything happens in one transaction that first takes a transaction-scoped advisory lock, so
 * concurrent openers queue, and each later one finds the versions already recorded.
 */
import type { Pool } from 'pg';
import { MIGRATIONS, type Migration } from './migrations.js';

/** Advisory lock keys (classid, objid); the class id is 'bm' so they are recognisable in pg_locks. */
export const LOCK_CLASS = 0x626d;
export const LOCK_MIGRATIONS = 1;

export interface MigrateResult {
  applied: number[];
  /** Versions found in the database that this code does not know (a newer release ran). */
  unknown: number[];
}

export async function migrate(pool: Pool, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrateResult> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS, LOCK_MIGRATIONS]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((row) => row.version));
    const known = new Set(migrations.map((m) => m.version));
    const applied: number[] = [];
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      applied.push(migration.version);
    }
    await client.query('COMMIT');
    client.release();
    return { applied, unknown: [...done].filter((version) => !known.has(version)).sort((a, b) => a - b) };
  } catch (err) {
    // Destroy rather than reuse: the connection may be mid-transaction or broken.
    client.release(err instanceof Error ? err : true);
    throw err;
  }
}
