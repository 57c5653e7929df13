/** The inventory ports' contract (contract/inventory.ts) on a real SQLite file and, with TEST_DATABASE_URL, on PostgreSQL by both write paths. */
import { after, describe, it } from 'node:test';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { dropScratchDatabases, scratchDatabase, tempDir, withPg } from '../support/scratch.js';
import { inventoryContract } from './contract/inventory.js';

inventoryContract('sqlite', async () => {
  const path = join(tempDir(), 'inventory.db');
  const store = await openSqliteStore({ path });
  const damage = async (sql: string) => {
    const db = new Database(path);
    db.pragma('busy_timeout = 5000');
    db.exec(sql);
    db.close();
  };
  return { store, damage, cleanup: () => store.close() };
});

if (!process.env.TEST_DATABASE_URL) {
  describe('inventory contract: postgres', () => {
    it('runs against PostgreSQL', { skip: 'TEST_DATABASE_URL is not set: the PostgreSQL inventory contract was NOT run' }, () => {});
  });
} else {
  let database: Promise<{ url: string }> | undefined;
  for (const [name, copyMinEvents] of [['postgres, one statement', Infinity], ['postgres, COPY', 1]] as const) {
    inventoryContract(name, async () => {
      database ??= scratchDatabase();
      const { url } = await database;
      const store = await openPostgresStore({ url, poolMax: 8, copyMinEvents });
      return { store, damage: (sql: string) => withPg(url, (client) => client.query(sql)).then(() => undefined), cleanup: () => store.close() };
    });
  }
  after(dropScratchDatabases);
}
