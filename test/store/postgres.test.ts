/**
 * The store contract against PostgreSQL, once per write path, in a database of its own (created on the TEST_DATABASE_URL
 * server, dropped at the end). Without TEST_DATABASE_URL the suite is registered as skipped.
 */
import { after, describe, it } from 'node:test';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { dropScratchDatabases, scratchDatabase } from '../support/scratch.js';
import { storeContract } from './contract.js';

if (!process.env.TEST_DATABASE_URL) {
  describe('store contract: postgres', () => {
    it('runs against PostgreSQL', { skip: 'TEST_DATABASE_URL is not set: the PostgreSQL store contract was NOT run' }, () => {});
  });
} else {
  let database: Promise<{ url: string }> | undefined;
  // Units take one of two write paths by size (encode.ts): each run forces one of them for every unit.
  for (const [name, copyMinEvents] of [['postgres, one statement', Infinity], ['postgres, COPY', 1]] as const) {
    storeContract(name, async () => {
      database ??= scratchDatabase();
      const store = await openPostgresStore({ url: (await database).url, poolMax: 8, copyMinEvents });
      return { store, cleanup: () => store.close() };
    });
  }
  after(dropScratchDatabases);
}
