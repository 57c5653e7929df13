/**
 * A second store on the same SQLite file or PostgreSQL database, as `bucketmeter usage rebuild` opens
 * one while the server runs, and damage to the usage rollups written past the store, as `usage verify`
 * would find it.
 */
import Database from 'better-sqlite3';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { Store } from '../../src/store/types.js';
import { MEASURE_COLUMNS, MEASURES, SHAPES } from '../../src/usage/shapes.js';
import { withPg } from './scratch.js';
import { attachDerived } from '../../src/store/sqlite/derived.js';

export type SameData = { backend: 'sqlite'; path: string } | { backend: 'postgres'; url: string };

export function openSameData(data: SameData): Promise<Store> {
  return data.backend === 'sqlite' ? openSqliteStore({ path: data.path }) : openPostgresStore({ url: data.url, poolMax: 2 });
}

const REQUESTS = MEASURE_COLUMNS[MEASURES.indexOf('requests')]!;

/**
 * Adds `extra` requests to every rollup row of the tenant, in every shape but tenant_day: that one
 * holds the tenant's event count, which a kept answer's version reads, and damage there would change
 * the version by itself (what a rebuild changes without a new event is what is tested).
 */
export async function damageRollups(data: SameData, tenantId: number, extra: number): Promise<void> {
  const statements = SHAPES.filter((s) => s.name !== 'tenant_day').map((s) => `UPDATE ${s.table} SET ${REQUESTS} = ${REQUESTS} + ${extra} WHERE tenant = ${tenantId}`);
  if (data.backend === 'postgres') {
    await withPg(data.url, async (client) => {
      for (const sql of statements) await client.query(sql);
    });
    return;
  }
  const db = new Database(data.path);
  try {
    db.pragma('busy_timeout = 5000');
    // The rollups are in the derived file.
    attachDerived(db, data.path);
    db.transaction(() => {
      for (const sql of statements) db.prepare(sql).run();
    })();
  } finally {
    db.close();
  }
}
