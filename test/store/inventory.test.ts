/** The inventory ports' contract (contract/inventory.ts) on a real SQLite file and, with TEST_DATABASE_URL, on PostgreSQL by both write paths. */
import { after, describe, it } from 'node:test';
import { join } from 'node:path';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { dropScratchDatabases, scratchDatabase, tempDir } from '../support/scratch.js';
import { inventoryContract } from './contract/inventory.js';

inventoryContract('sqlite', async () => {
  const store = await openSqliteStore({ path: join(tempDir(), 'inventory.db') });
  return { store, cleanup: () => store.close() };
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
      const store = await openPostgresStore({ url: (await database).url, poolMax: 8, copyMinEvents });
      return { store, cleanup: () => store.close() };
    });
  }
  after(dropScratchDatabases);
}
