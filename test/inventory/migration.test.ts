/**
 * Upgrading a store from before the inventory (schema 4): the events already stored are queued in
 * the outbox by the migration, and the first read builds the inventory from them. Both stores.
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
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { tempDir } from '../support/server.js';

const T = Date.parse('2026-03-01T10:00:00Z') / 1000;

after(dropFreshStores);

/** A store of schema 4 holding a PutObject (photos/a, 100 bytes, customer cus) and a GetObject. */
async function oldStore(backend: 'sqlite' | 'postgres'): Promise<Store> {
  if (backend === 'sqlite') {
    const path = join(tempDir(), 'bucketmeter.db');
    const db = new Database(path);
    migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, 4), () => T);
    db.exec(`INSERT INTO tenants (id, name, created_at) VALUES (1, 'old', ${T});
      INSERT INTO dict (id, value) VALUES (1, 'aws'), (2, 'cus'), (3, 'photos');
      INSERT INTO object_keys (id, value) VALUES (9, 'a');
      INSERT INTO events (seq, tenant, timestamp, received_after, action, provider, customer, bucket, object_key, bytes, event_id)
        VALUES (1, 1, ${T}, 5, 2, 1, 2, 3, 9, 100, 'put-a'), (2, 1, ${T + 60}, 5, 1, 1, 2, 3, 9, 100, 'get-a');
      UPDATE counters SET value = 2 WHERE name = 'event_seq';`);
    db.close();
    return openSqliteStore({ path });
  }
  const args = await BACKENDS.find((b) => b.name === 'postgres')!.fresh();
  const pool = new pg.Pool({ connectionString: args[1] });
  try {
    await migratePg(pool, PG_MIGRATIONS.slice(0, 4));
    await pool.query(`INSERT INTO tenants (id, name) VALUES (1, 'old');
      INSERT INTO dict (id, value) VALUES (1, 'aws'), (2, 'cus'), (3, 'photos');
      INSERT INTO events (seq, ts, received_at, tenant_id, action, provider_id, customer_id, bucket_id, object_key, bytes, event_id)
        VALUES (1, ${T}, ${T + 5}, 1, 2, 1, 2, 3, 'a', 100, 'put-a'), (2, ${T + 60}, ${T + 65}, 1, 1, 1, 2, 3, 'a', 100, 'get-a');`);
  } finally {
    await pool.end();
  }
  return openPostgresStore({ url: args[1]! });
}

for (const backend of BACKENDS) {
  describe(`upgrade to the inventory (${backend.name})`, { skip: backend.skip }, () => {
    it('builds the inventory from the events already stored', async () => {
      const store = await oldStore(backend.name);
      try {
        assert.equal((await store.inventory.lag()).pending, 1);
        const listed = await store.inventory.objects(1, { bucket: 'photos', at: T + 3600, includeVersions: false, limit: 10 });
        assert.deepEqual(listed.map((o) => [o.objectKey, o.size, o.created.eventId, o.created.customerId]), [['a', 100n, 'put-a', 'cus']]);
        assert.deepEqual(await store.inventory.verify(1), []);
      } finally {
        await store.close();
      }
    });
  });
}
