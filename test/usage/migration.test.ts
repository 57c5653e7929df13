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
import { columnRows } from '../../src/store/usage-columns.js';
import { SHAPES, planUsage } from '../../src/usage/shapes.js';
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

/** Two hours and a day of one tenant's events, by bucket and client (some with none), stored at schema 2. */
const EVENTS_BY_BUCKET = {
  sqlite: `INSERT INTO tenants (id, name, created_at) VALUES (1, 'old', ${T});
    INSERT INTO api_keys (id, tenant_id, hash, created_at) VALUES ('k1', 1, x'00', ${T});
    INSERT INTO dict (id, value) VALUES (1, 'aws'), (2, 'cus'), (3, 'b1'), (4, 'b2'), (5, 'd1');
    INSERT INTO events (seq, tenant, timestamp, received_after, action, provider, customer, bucket, client_id, bytes) VALUES
      (1, 1, ${T}, 5, 1, 1, 2, 3, 5, 100), (2, 1, ${T + 60}, 5, 2, 1, 2, 3, NULL, 7), (3, 1, ${T + 120}, 5, 1, 1, NULL, 4, 5, 1000),
      (4, 1, ${T + 3600}, 5, 1, 1, 2, 4, NULL, 50), (5, 1, ${T + 3700}, 5, 2, 1, NULL, 3, 5, 9), (6, 1, ${T + 86400}, 5, 14, 1, 2, NULL, NULL, NULL);
    UPDATE counters SET value = 6 WHERE name = 'event_seq';`,
  postgres: `INSERT INTO tenants (id, name) VALUES (1, 'old');
    INSERT INTO api_keys (id, tenant_id, hash, created_at) VALUES ('k1', 1, '\\x00', ${T});
    INSERT INTO dict (id, value) VALUES (1, 'aws'), (2, 'cus'), (3, 'b1'), (4, 'b2'), (5, 'd1');
    INSERT INTO events (seq, ts, received_at, tenant_id, action, provider_id, customer_id, bucket_id, client_id, bytes) VALUES
      (1, ${T}, ${T + 5}, 1, 1, 1, 2, 3, 5, 100), (2, ${T + 60}, ${T + 65}, 1, 2, 1, 2, 3, NULL, 7), (3, ${T + 120}, ${T + 125}, 1, 1, 1, NULL, 4, 5, 1000),
      (4, ${T + 3600}, ${T + 3605}, 1, 1, 1, 2, 4, NULL, 50), (5, ${T + 3700}, ${T + 3705}, 1, 2, 1, NULL, 3, 5, 9), (6, ${T + 86400}, ${T + 86405}, 1, 14, 1, 2, NULL, NULL, NULL);`,
};

/** What usage_fine said per hour, bucket and client (schema 12: the byte sums' parts joined), as hour|bucket|client → measures. */
const FINE_ANSWER_SQL = `SELECT f.hour, (SELECT value FROM dict WHERE id = f.bucket), (SELECT value FROM dict WHERE id = f.client_id),
  ${['requests', 'read_bytes + f.read_bytes_hi * 16777216', 'egress_bytes + f.egress_bytes_hi * 16777216', 'written_bytes + f.written_bytes_hi * 16777216'].map((m) => `CAST(sum(f.${m}) AS TEXT)`).join(', ')}
  FROM usage_fine f WHERE f.tenant = 1 GROUP BY 1, 2, 3`;

const answerKey = (hour: number, bucket: string | null, client: string | null) => `${hour}|${bucket ?? ''}|${client ?? ''}`;

/** A store of schema 12 (usage_fine and usage_customer filled by migrations 4 and 8), and what usage_fine answered by bucket and client. */
async function schema12Store(backend: 'sqlite' | 'postgres'): Promise<{ open(): Promise<Store>; fine: Map<string, bigint[]>; tables(): Promise<string[]> }> {
  const rows = (raw: unknown[][]) => new Map(raw.map(([hour, bucket, client, ...m]) => [answerKey(Number(hour), bucket as string | null, client as string | null), m.map((x) => BigInt(x as string))]));
  if (backend === 'sqlite') {
    const path = join(tempDir(), 'bucketmeter.db');
    const db = new Database(path);
    try {
      migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, 2), () => T);
      db.exec(EVENTS_BY_BUCKET.sqlite);
      migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, 12), () => T);
      const tables = async () => {
        const check = new Database(path, { readonly: true });
        try {
          return check.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('usage_fine', 'usage_customer') ORDER BY name").pluck().all() as string[];
        } finally {
          check.close();
        }
      };
      return { open: () => openSqliteStore({ path }), fine: rows(db.prepare(FINE_ANSWER_SQL).raw(true).all() as unknown[][]), tables };
    } finally {
      db.close();
    }
  }
  const url = (await BACKENDS.find((b) => b.name === 'postgres')!.fresh())[1]!;
  const tables = async () => {
    const pool = new pg.Pool({ connectionString: url });
    try {
      const { rows } = await pool.query<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ('usage_fine', 'usage_customer') ORDER BY 1");
      return rows.map((r) => r.name);
    } finally {
      await pool.end();
    }
  };
  const pool = new pg.Pool({ connectionString: url });
  try {
    await migratePg(pool, PG_MIGRATIONS.slice(0, 2));
    await pool.query(EVENTS_BY_BUCKET.postgres);
    await migratePg(pool, PG_MIGRATIONS.slice(0, 12));
    const { rows: raw } = await pool.query<unknown[]>({ text: FINE_ANSWER_SQL, rowMode: 'array' });
    return { open: () => openPostgresStore({ url }), fine: rows(raw), tables };
  } finally {
    await pool.end();
  }
}

for (const backend of BACKENDS) {
  describe(`upgrade to usage from the events (${backend.name})`, { skip: backend.skip }, () => {
    it('drops usage_fine and usage_customer; what usage_fine answered, the events answer the same, and the stored shapes agree', async () => {
      const old = await schema12Store(backend.name);
      assert.deepEqual(await old.tables(), ['usage_customer', 'usage_fine'], 'schema 12 had them');
      assert.equal(old.fine.size, 6, 'filled from the events by migrations 4 and 12');
      const store = await old.open();
      try {
        assert.deepEqual(await old.tables(), [], 'migration 13 dropped them');
        // The rollups stayed up to date with the events: nothing waits to be folded.
        assert.deepEqual(await store.usage.lag(), { pendingEvents: 0, oldestSeconds: 0 });
        const hour = T / 3600;
        const bounds = Array.from({ length: 27 }, (_, h) => hour - 1 + h);
        const terms = planUsage(['bucket', 'clientId'], bounds);
        assert.deepEqual(terms.map((t) => t.shape.name), ['events']);
        const answer = new Map(columnRows(await store.usage.query(1, { terms, groupBy: ['bucket', 'clientId'], filters: {} })).map((r) => [answerKey(bounds[r.window]!, r.values[0]!, r.values[1]!), r.measures]));
        assert.deepEqual(answer, old.fine);
        const day = Math.floor(T / 86400);
        for (const check of await store.usage.reconcile(1, day, day + 2)) {
          assert.deepEqual(Object.keys(check.rollups).sort(), SHAPES.map((s) => s.name).sort());
          for (const shape of SHAPES) assert.deepEqual(check.rollups[shape.name], check.events, `${shape.name} on day ${check.day}`);
        }
      } finally {
        await store.close();
      }
    });
  });
}
