/**
 * Upgrading a store from before the inventory (schema 4): the events already stored are queued in
 * the outbox by the migration, and the first read builds the inventory from them. And from schema 5,
 * whose inventory was built but has no per-key log (migration 7): the first catch-up logs every
 * stored event, so that a late event is replayed with the history before the upgrade. From before the
 * coarse delta shapes (schema 9): migration 10 fills them from the stored hourly deltas. From before
 * wide byte sums (schema 11): migration 12 splits what is stored. Both stores.
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
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import type { Store } from '../../src/store/types.js';
import { columnRows } from '../../src/store/usage-columns.js';
import { COARSE_SHAPES, STORAGE_SHAPES, WIDE_VALUE_COLUMNS, valueColumns } from '../../src/inventory/shapes.js';
import { DROPPED_SHAPES, GRAIN_HOURS, SHAPES, WIDE_MEASURE_COLUMNS } from '../../src/usage/shapes.js';
import { MAX_RANGE_DAYS } from '../../src/usage/params.js';
import { createShapeSql as createSqliteShapeSql } from '../../src/store/sqlite/usage-sql.js';
import { createShapeSql as createPgShapeSql } from '../../src/store/postgres/usage-sql.js';
import { highColumn } from '../../src/store/wide.js';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { tempDir } from '../support/server.js';
import { attachDerived, derivedPath } from '../../src/store/sqlite/derived.js';
import { moveDerivedBack } from '../support/derived.js';
import { existsSync } from 'node:fs';

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

const EVENTS_SQLITE = `INSERT INTO tenants (id, name, created_at) VALUES (1, 'old', ${T});
  INSERT INTO dict (id, value) VALUES (1, 'aws'), (2, 'cus'), (3, 'photos');
  INSERT INTO object_keys (id, value) VALUES (9, 'a');
  INSERT INTO events (seq, tenant, timestamp, received_after, action, provider, customer, bucket, object_key, bytes, event_id)
    VALUES (1, 1, ${T}, 5, 2, 1, 2, 3, 9, 100, 'put-a'), (2, 1, ${T + 60}, 5, 1, 1, 2, 3, 9, 100, 'get-a');
  UPDATE counters SET value = 2 WHERE name = 'event_seq';`;
// A tenant made by the code of schema 3 and later has its own sequence (migration 3), above its events' seqs.
const EVENTS_PG = `INSERT INTO tenants (id, name) VALUES (1, 'old');
  CREATE SEQUENCE event_seq_t1 AS bigint INCREMENT BY 1000 START WITH 1001;
  INSERT INTO dict (id, value) VALUES (1, 'aws'), (2, 'cus'), (3, 'photos');
  INSERT INTO events (seq, ts, received_at, tenant_id, action, provider_id, customer_id, bucket_id, object_key, bytes, event_id)
    VALUES (1, ${T}, ${T + 5}, 1, 2, 1, 2, 3, 'a', 100, 'put-a'), (2, ${T + 60}, ${T + 65}, 1, 1, 1, 2, 3, 'a', 100, 'get-a');`;
/** The inventory's tables of schema 5 (unchanged since but for migration 12's columns): what its catch-up had built. */
const BUILT_TABLES = ['inventory', 'inventory_hours'];

/**
 * Undoes migration 12 on a store of the current schema: each wide column's value back in its low
 * column, its high column dropped (SQL of both stores).
 */
const NARROW_SQL = [
  ...SHAPES.map((shape) => [shape.table, WIDE_MEASURE_COLUMNS] as const),
  ...STORAGE_SHAPES.map((shape) => [shape.table, valueColumns(shape).filter((c) => WIDE_VALUE_COLUMNS.includes(c))] as const),
]
  .map(([table, wide]) => `UPDATE ${table} SET ${wide.map((c) => `${c} = ${c} + (${highColumn(c)} << 24)`).join(', ')};
    ${wide.map((c) => `ALTER TABLE ${table} DROP COLUMN ${highColumn(c)};`).join('\n')}`)
  .join('\n');

/**
 * A store of schema 5 whose inventory was built (the outbox applied) from the events of oldStore.
 * Schema 5's catch-up is gone from the code, so the inventory it built is copied from a twin store
 * of the current schema holding the same events (the inventory's tables did not change since).
 */
async function builtStore(backend: 'sqlite' | 'postgres'): Promise<Store> {
  if (backend === 'sqlite') {
    const twinPath = join(tempDir(), 'twin.db');
    const twin = new Database(twinPath);
    migrateSqlite(twin, SQLITE_MIGRATIONS.slice(0, 3), () => T);
    twin.exec(EVENTS_SQLITE);
    twin.close();
    const built = await openSqliteStore({ path: twinPath });
    await built.inventory.objects(1, { bucket: 'photos', at: T, includeVersions: false, limit: 1 });
    await built.close();
    const path = join(tempDir(), 'bucketmeter.db');
    const db = new Database(path);
    migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, 3), () => T);
    db.exec(EVENTS_SQLITE);
    migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, 5), () => T);
    // Schema 5's columns (the twin's high parts are 0: its sizes are small), from the twin's derived file.
    const columns = (t: string) => (db.prepare(`SELECT name FROM pragma_table_info('${t}')`).pluck().all() as string[]).join(', ');
    db.exec(`ATTACH '${derivedPath(twinPath)}' AS twin; DELETE FROM inventory_outbox;
      ${BUILT_TABLES.map((t) => `INSERT INTO ${t} SELECT ${columns(t)} FROM twin.${t};`).join('\n')}
      DETACH twin;`);
    db.close();
    return openSqliteStore({ path });
  }
  const pgUrl = async () => (await BACKENDS.find((b) => b.name === 'postgres')!.fresh())[1]!;
  const [twinUrl, url] = [await pgUrl(), await pgUrl()];
  const twin = new pg.Pool({ connectionString: twinUrl });
  const pool = new pg.Pool({ connectionString: url });
  try {
    await migratePg(twin, PG_MIGRATIONS.slice(0, 3));
    await twin.query(EVENTS_PG);
    const built = await openPostgresStore({ url: twinUrl });
    await built.inventory.objects(1, { bucket: 'photos', at: T, includeVersions: false, limit: 1 });
    await built.close();
    await migratePg(pool, PG_MIGRATIONS.slice(0, 3));
    await pool.query(EVENTS_PG);
    await migratePg(pool, PG_MIGRATIONS.slice(0, 5));
    await pool.query('DELETE FROM inventory_outbox');
    for (const table of BUILT_TABLES) {
      const { rows } = await twin.query(`SELECT * FROM ${table}`);
      assert.ok(rows.length > 0, `the twin built ${table}`);
      // Schema 5's columns (the twin's high parts are 0: its sizes are small); not the ids: new
      // entries take theirs from the table's own sequence.
      const { fields } = await pool.query(`SELECT * FROM ${table} LIMIT 0`);
      const columns = fields.map((f) => f.name).filter((c) => c !== 'id');
      for (const row of rows) await pool.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`, columns.map((c) => row[c]));
    }
  } finally {
    await twin.end();
    await pool.end();
  }
  return openPostgresStore({ url });
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

    it('from schema 5, logs the events of the inventory it built, so a late event is replayed with them', async () => {
      const store = await builtStore(backend.name);
      try {
        const at = (t: number) => store.inventory.objects(1, { bucket: 'photos', at: t, includeVersions: false, limit: 10 }).then((list) => list.map((o) => [o.objectKey, o.size, o.created.eventId]));
        assert.deepEqual(await at(T + 3600), [['a', 100n, 'put-a']]);
        // Before put-a: without put-a in the log, the replay from T - 30 would drop its version.
        const late = { action: 'PutObject', timestamp: T - 30, provider: 'aws', bucket: 'photos', objectKey: 'a', bytes: 40, eventId: 'put-early', customerId: 'cus' };
        await store.commit({ events: [{ tenantId: 1, receivedAt: T + 7200, event: late as unknown as NormalizedEvent }], quarantine: [] });
        assert.deepEqual(await at(T - 10), [['a', 40n, 'put-early']]);
        assert.deepEqual(await at(T + 3600), [['a', 100n, 'put-a']]);
        assert.deepEqual(await store.inventory.verify(1), []);
        const day = Math.floor(T / 86400);
        const [check] = await store.usage.reconcile(1, day, day + 1);
        // Usage counted the events before the upgrade once (migration 6) and the late one after it.
        assert.deepEqual(check!.events, [3n, 100n, 100n, 140n]);
        for (const [shape, measures] of Object.entries(check!.rollups)) assert.deepEqual(measures, check!.events, shape);
      } finally {
        await store.close();
      }
    });
  });
}

/** Opens a fresh store of the backend; `raw` runs SQL on its database with the store closed. */
async function freshStore(backend: 'sqlite' | 'postgres'): Promise<{ open(): Promise<Store>; raw(sql: string): Promise<void>; count(sql: string): Promise<number> }> {
  if (backend === 'sqlite') {
    const path = join(tempDir(), 'bucketmeter.db');
    return {
      open: () => openSqliteStore({ path }),
      raw: async (sql) => {
        const db = new Database(path);
        moveDerivedBack(db, path);
        db.exec(sql);
        db.close();
      },
      count: async (sql) => {
        const db = new Database(path, { readonly: true });
        try {
          // From schema 14 the derived tables are in the derived file; before it, in the events file.
          if (existsSync(derivedPath(path))) attachDerived(db, path);
          return Number(db.prepare(sql).pluck().get());
        } finally {
          db.close();
        }
      },
    };
  }
  const url = (await BACKENDS.find((b) => b.name === 'postgres')!.fresh())[1]!;
  return {
    open: () => openPostgresStore({ url }),
    raw: async (sql) => {
      const pool = new pg.Pool({ connectionString: url });
      try {
        await pool.query(sql);
      } finally {
        await pool.end();
      }
    },
    count: async (sql) => {
      const pool = new pg.Pool({ connectionString: url });
      try {
        return Number((await pool.query<{ n: string }>(sql)).rows[0]!.n);
      } finally {
        await pool.end();
      }
    },
  };
}

/** The hourly usage shapes migration 13 dropped, as the schema before it had them (narrow; empty: these tests are not about them). */
const DROPPED_SQL = { sqlite: DROPPED_SHAPES.map(createSqliteShapeSql).join('\n'), postgres: DROPPED_SHAPES.map(createPgShapeSql).join('\n') };

/** Rows of every wide table whose low part is not a low part (outside [0, 2^24)): what migration 12 splits. */
const UNSPLIT_SQL = `SELECT ${[
  ...SHAPES.map((shape) => [shape.table, WIDE_MEASURE_COLUMNS] as const),
  ...STORAGE_SHAPES.map((shape) => [shape.table, valueColumns(shape).filter((c) => WIDE_VALUE_COLUMNS.includes(c))] as const),
]
  .map(([table, wide]) => `(SELECT count(*) FROM ${table} WHERE ${wide.map((c) => `${c} < 0 OR ${c} > ${2 ** 24 - 1}`).join(' OR ')})`)
  .join(' + ')} AS n`;

for (const backend of BACKENDS) {
  describe(`upgrade to the coarse inventory delta shapes (${backend.name})`, { skip: backend.skip }, () => {
    it('fills them from the hourly deltas already stored', async () => {
      const fresh = await freshStore(backend.name);
      const bounds = [T / 3600 - 1, T / 3600 + 1, T / 3600 + 3];
      const queries = STORAGE_SHAPES.map((shape) => ({ bounds, groupBy: [...shape.dimensions], filters: {} }));
      let store = await fresh.open();
      let before: unknown[];
      let tenantId: number;
      try {
        ({ tenantId } = await store.keys.create({ id: 'key_shapes', tenantName: 'shapes', hash: Buffer.alloc(32, 1), createdAt: T }));
        const put = (eventId: string, at: number, bucket: string, objectKey: string, bytes: number, customerId: string) =>
          ({ tenantId, receivedAt: T + 7200, event: { eventId, timestamp: at, action: 'PutObject', provider: 'aws', bucket, objectKey, bytes, customerId } as unknown as NormalizedEvent });
        await store.commit({ events: [put('p1', T, 'photos', 'a', 100, 'cus'), put('p2', T + 60, 'videos', 'b', 5000, 'other'), put('p3', T + 3700, 'photos', 'a', 70, 'cus')], quarantine: [] });
        before = await Promise.all(queries.map((q) => store.inventory.storage(tenantId, q)));
      } finally {
        await store.close();
      }
      // A store of schema 9 with its inventory built: no coarse shapes yet, nor the later steps' tables and columns.
      await fresh.raw(`${NARROW_SQL}
        ${COARSE_SHAPES.map((shape) => `DROP TABLE ${shape.table};`).join('\n')}
        DROP TABLE rebuilds;
        ${DROPPED_SQL[backend.name]}
        DELETE FROM schema_migrations WHERE version >= 10;`);
      store = await fresh.open();
      try {
        assert.deepEqual(await Promise.all(queries.map((q) => store.inventory.storage(tenantId, q))), before);
        assert.deepEqual(await store.inventory.verify(tenantId), []);
      } finally {
        await store.close();
      }
    });
  });
}

for (const backend of BACKENDS) {
  describe(`upgrade to wide byte sums (${backend.name})`, { skip: backend.skip }, () => {
    it('splits the byte sums already stored: storage and usage read as before, verify and reconcile find nothing', async () => {
      const fresh = await freshStore(backend.name);
      const day = Math.floor(T / 86400);
      const bounds = [T / 3600 - 1, T / 3600 + 1, T / 3600 + 3, T / 3600 + 24 * 400];
      const queries = STORAGE_SHAPES.map((shape) => ({ bounds, groupBy: [...shape.dimensions], filters: {} }));
      // The longest range the API takes, from the day before the events; a wider one only adds empty pieces to scan.
      const usage = SHAPES.map((shape) => {
        const perDay = 24 / GRAIN_HOURS[shape.grain];
        const span = { window: 0, from: (day - 1) * perDay, to: (day - 1 + MAX_RANGE_DAYS) * perDay, sign: 1 as const };
        return { terms: [{ shape, spans: [span] }], groupBy: [...shape.dimensions], filters: {} };
      });
      const read = async (store: Store, tenantId: number) => ({
        storage: await Promise.all(queries.map((q) => store.inventory.storage(tenantId, q))),
        usage: await Promise.all(usage.map(async (q) => columnRows(await store.usage.query(tenantId, q)))),
      });
      let store = await fresh.open();
      let before: unknown;
      let tenantId: number;
      try {
        ({ tenantId } = await store.keys.create({ id: 'key_wide', tenantName: 'wide', hash: Buffer.alloc(32, 2), createdAt: T }));
        // Sizes past 2^24, whose sums migration 12 splits, and a delete (negative deltas).
        const event = (eventId: string, at: number, action: string, objectKey: string, bytes: number | undefined) =>
          ({ tenantId, receivedAt: T + 7200, event: { eventId, timestamp: at, action, provider: 'aws', bucket: 'photos', objectKey, ...(bytes === undefined ? {} : { bytes }), customerId: 'cus' } as unknown as NormalizedEvent });
        await store.commit({
          events: [event('p1', T, 'PutObject', 'a', 5_000_000_007), event('p2', T + 60, 'PutObject', 'b', 2 ** 44), event('g1', T + 70, 'GetObject', 'b', 2 ** 44), event('d1', T + 3700, 'DeleteObject', 'a', undefined)],
          quarantine: [],
        });
        before = await read(store, tenantId);
        const text = JSON.stringify(before, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
        assert.ok(text.includes(`"${2 ** 44}"`) && text.includes('"-5000000007"'), 'the reads hold the sizes sent');
      } finally {
        await store.close();
      }
      // A store of schema 11: its byte sums in one column each.
      await fresh.raw(`${NARROW_SQL}
        ${DROPPED_SQL[backend.name]}
        DELETE FROM schema_migrations WHERE version >= 12;`);
      assert.ok((await fresh.count(UNSPLIT_SQL)) > 0, 'schema 11 holds sums to split');
      store = await fresh.open();
      await store.close();
      // Every stored sum split (the reads join any parts alike, so they cannot tell): its low part below 2^24.
      assert.equal(await fresh.count(UNSPLIT_SQL), 0, 'migration 12 left sums unsplit');
      store = await fresh.open();
      try {
        assert.deepEqual(await read(store, tenantId), before);
        assert.deepEqual(await store.inventory.verify(tenantId), []);
        const checks = await store.usage.reconcile(tenantId, day - 1, day + 2);
        for (const c of checks) for (const rollup of Object.values(c.rollups)) assert.deepEqual(rollup, c.events, `day ${c.day}`);
      } finally {
        await store.close();
      }
    });
  });
}
