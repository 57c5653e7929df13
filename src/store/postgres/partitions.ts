/**
 * Monthly range partitions of `events` by event timestamp (UTC months), created ahead of time so
 * retention is `DROP TABLE events_yYYYYmMM`. Rows no partition covers go to events_default; when a
 * month is created later, its rows are moved out of the default partition first (attaching a range
 * that the default partition still holds rows for would fail).
 */
import type { Pool } from 'pg';
import { LOCK_CLASS } from './migrate.js';

const LOCK_PARTITIONS = 2;

export interface MonthPartition {
  name: string;
  /** Epoch seconds, inclusive. */
  from: number;
  /** Epoch seconds, exclusive. */
  to: number;
}

/** The month containing `epochSeconds`, shifted by `offset` months. */
export function monthPartition(epochSeconds: number, offset = 0): MonthPartition {
  const date = new Date(epochSeconds * 1000);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth() + offset;
  const start = new Date(Date.UTC(year, month, 1));
  const name = `events_y${start.getUTCFullYear()}m${String(start.getUTCMonth() + 1).padStart(2, '0')}`;
  return { name, from: Date.UTC(year, month, 1) / 1000, to: Date.UTC(year, month + 1, 1) / 1000 };
}

/**
 * Ensures the partitions for the current month and the `monthsAhead` following ones exist; returns
 * the names it created. Safe to run from many processes at once (advisory lock, existence check).
 */
export async function ensurePartitions(pool: Pool, now: number, monthsAhead: number): Promise<string[]> {
  const created: string[] = [];
  for (let offset = 0; offset <= monthsAhead; offset++) {
    const partition = monthPartition(now, offset);
    if (await createPartition(pool, partition)) created.push(partition.name);
  }
  return created;
}

async function createPartition(pool: Pool, { name, from, to }: MonthPartition): Promise<boolean> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // Our lock requests queue ahead of inserts into the default partition; give up quickly rather
    // than stall ingestion behind a long reader, the next maintenance run retries.
    await client.query("SET LOCAL lock_timeout = '2s'");
    await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS, LOCK_PARTITIONS]);
    const { rows } = await client.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [name]);
    if (rows[0]?.exists) {
      await client.query('COMMIT');
      client.release();
      return false;
    }
    // ATTACH takes this lock anyway; taking it first means no row can reach the default partition
    // between the move and the attach.
    await client.query('LOCK TABLE events_default IN ACCESS EXCLUSIVE MODE');
    await client.query(`CREATE TABLE ${name} (LIKE events)`);
    await client.query(
      `WITH moved AS (DELETE FROM events_default WHERE ts >= $1 AND ts < $2 RETURNING *)
       INSERT INTO ${name} SELECT * FROM moved`,
      [from, to],
    );
    // ATTACH (not CREATE ... PARTITION OF) locks the parent only in SHARE UPDATE EXCLUSIVE mode, so
    // inserts into the other partitions go on; it builds the partition's indexes itself.
    await client.query(`ALTER TABLE events ATTACH PARTITION ${name} FOR VALUES FROM (${from}) TO (${to})`);
    await client.query('COMMIT');
    client.release();
    return true;
  } catch (err) {
    client.release(err instanceof Error ? err : true);
    throw err;
  }
}
