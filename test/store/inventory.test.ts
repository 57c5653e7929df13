/** The inventory ports' contract (contract/inventory.ts) on a real SQLite file and, with TEST_DATABASE_URL, on PostgreSQL by both write paths. */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { attachDerived } from '../../src/store/sqlite/derived.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { dropScratchDatabases, scratchDatabase, tempDir, withPg } from '../support/scratch.js';
import { inventoryContract } from './contract/inventory.js';

// A catch-up span of one seq applies one outbox row a step (inventory-step.ts): a backlog of many
// transactions is then applied in as many steps, each in a transaction of its own.
for (const [name, catchUpSpan] of [['sqlite', undefined], ['sqlite, catch-up one outbox row a step', 1]] as const) {
  inventoryContract(name, async () => {
    const path = join(tempDir(), 'inventory.db');
    const store = await openSqliteStore({ path, ...(catchUpSpan === undefined ? {} : { catchUpSpan }) });
    const damage = async (sql: string) => {
      const db = new Database(path);
      db.pragma('busy_timeout = 5000');
      // The inventory is in the derived file.
      attachDerived(db, path);
      db.exec(sql);
      db.close();
    };
    return { store, damage, cleanup: () => store.close() };
  });
}

if (!process.env.TEST_DATABASE_URL) {
  describe('inventory contract: postgres', () => {
    it('runs against PostgreSQL', { skip: 'TEST_DATABASE_URL is not set: the PostgreSQL inventory contract was NOT run' }, () => {});
  });
} else {
  let database: Promise<{ url: string }> | undefined;
  const variants = [
    ['postgres, one statement', { copyMinEvents: Infinity }],
    ['postgres, COPY', { copyMinEvents: 1 }],
    ['postgres, catch-up one outbox row a step', { catchUpSpan: 1 }],
  ] as const;
  for (const [name, options] of variants) {
    inventoryContract(name, async () => {
      database ??= scratchDatabase();
      const { url } = await database;
      const store = await openPostgresStore({ url, poolMax: 8, ...options });
      return { store, damage: (sql: string) => withPg(url, (client) => client.query(sql)).then(() => undefined), cleanup: () => store.close() };
    });
  }
  after(dropScratchDatabases);
}

describe('inventory catch-up steps', () => {
  it('a step of less than one seq, which would never end, is refused when the store opens', async () => {
    await assert.rejects(openSqliteStore({ path: join(tempDir(), 'inventory.db'), catchUpSpan: 0 }), /at least one seq, not 0/);
    await assert.rejects(openPostgresStore({ url: 'postgres://postgres@127.0.0.1:1/none', catchUpSpan: 0.5 }), /at least one seq, not 0.5/);
  });
});
