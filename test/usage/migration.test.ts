/**
 * Upgrading a store from before usage (schema 2): existing keys get scope `all`, and the events
 * already stored are in the rollups and receipts, so verify agrees at once. Both stores.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { migrate as migrateSqlite } from '../../src/store/sqlite/migrate.js';
import { MIGRATIONS as PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { migrate as migratePg } from '../../src/store/postgres/migrate.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import type { Store } from '../../src/store/types.js';
import { SHAPES } from '../../src/usage/shapes.js';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { tempDir } from '../support/server.js';

const T = Date.parse('2026-03-01T10:00:00Z') / 1000;

after(dropFreshStores);

/** What a store of schema 2 held: a key and two events of one tenant (GetObject 100 bytes, PutObject 7). */
async function oldStore(backend: 'sqlite' | 'postgres'): Promise<Store> {
  if (backend === 'sqlite') {
    const path = join(tempDir(), 'bucketmeter.db');
    const db = new Database(path);
    migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, 2), () => T);
    db.exec(`INSERT INTO tenants (id, name, created_at) VALUES (1, 'old', ${T});
      INSERT INTO api_keys (id, tenant_id, hash, created_at) VALUES ('k1', 1, x'00', ${T});
      INSERT INTO dict (id, value) VALUES (1, 'aws'), (2, 'cus');
      INSERT INTO events (seq, tenant, timestamp, received_after, action, provider, customer, bytes) VALUES (1, 1, ${T}, 5, 1, 1, 2, 100), (2, 1, ${T + 3600}, 5, 2, 1, NULL, 7);
      UPDATE counters SET value = 2 WHERE name = 'event_seq';`);
    db.close();
    return openSqliteStore({ path });
  }
  const args = await BACKENDS.find((b) => b.name === 'postgres')!.fresh();
  const pool = new pg.Pool({ connectionString: args[1] });
  try {
    await migratePg(pool, PG_MIGRATIONS.slice(0, 2));
    await pool.query(`INSERT INTO tenants (id, name) VALUES (1, 'old');
      INSERT INTO api_keys (id, tenant_id, hash, created_at) VALUES ('k1', 1, '\\x00', ${T});
      INSERT INTO dict (id, value) VALUES (1, 'aws'), (2, 'cus');
      INSERT INTO events (seq, ts, received_at, tenant_id, action, provider_id, customer_id, bytes) VALUES (1, ${T}, ${T + 5}, 1, 1, 1, 2, 100), (2, ${T + 3600}, ${T + 3605}, 1, 2, 1, NULL, 7);`);
  } finally {
    await pool.end();
  }
  return openPostgresStore({ url: args[1]! });
}

for (const backend of BACKENDS) {
  describe(`upgrade to usage (${backend.name})`, { skip: backend.skip }, () => {
    it('keeps existing keys working with scope all and counts the events already stored', async () => {
      const store = await oldStore(backend.name);
      try {
        assert.deepEqual((await store.keys.list()).map((k) => [k.id, k.scope]), [['k1', 'all']]);
        // Migration 6: the rollups migration 4 filled are up to date, so nothing waits to be folded (a fold would count them twice).
        assert.deepEqual(await store.usage.lag(), { pendingEvents: 0, oldestSeconds: 0 });
        const day = Math.floor(T / 86400);
        const checks = await store.usage.reconcile(1, day, day + 1);
        assert.equal(checks.length, 1);
        const [c] = checks;
        assert.deepEqual(c!.events, [2n, 100n, 100n, 7n]);
        // Every shape, those of migration 4 and those added later, filled from the events stored.
        for (const shape of SHAPES) assert.deepEqual(c!.rollups[shape.name], c!.events, shape.name);
        assert.deepEqual(c!.receipts, { received: 2n, stored: 2n, duplicates: 0n, rejected: 0n });
        assert.equal(c!.storedByArrival, 2n);
      } finally {
        await store.close();
      }
    });
  });
}
