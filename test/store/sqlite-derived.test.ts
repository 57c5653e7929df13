/**
 * SQLite's derived file (store/sqlite/derived.ts): the usage rollups and their cursor live next to the
 * events file, written by a thread of their own. Migration 14 moves them there from a store made
 * before it, rows unchanged; a derived file that is missing, another store's, or ahead of its events
 * file (the events restored from an older backup) is made afresh and refilled from the events; and
 * a fold that cannot write the derived file holds no commit. Real files, real threads.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import { migrate } from '../../src/store/sqlite/migrate.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { DERIVED_TABLES, attachDerived, derivedPath } from '../../src/store/sqlite/derived.js';
import { MEASURES, SHAPES } from '../../src/usage/shapes.js';
import { T0, getObject, newTenant } from './contract.js';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { moveDerivedBack } from '../support/derived.js';
import { tempDir } from '../support/server.js';

const DAY = Math.floor(T0 / 86400);

type Rows = Record<string, unknown[][]>;

const sorted = (rows: unknown[][]) => rows.map((r) => JSON.stringify(r)).sort().map((r) => JSON.parse(r) as unknown[]);

/** Every row of the derived tables in the file (or null for a table it lacks). */
function tables(file: string): Record<string, unknown[][] | null> {
  const db = new Database(file, { readonly: true });
  try {
    const has = (t: string) => db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(t) === 1;
    return Object.fromEntries(DERIVED_TABLES.map((t) => [t, has(t) ? sorted(db.prepare(`SELECT * FROM ${t}`).raw(true).all() as unknown[][]) : null]));
  } finally {
    db.close();
  }
}

/** The derived file's rows; `rebuilt`: those a rebuild from the events gives again (not the inventory's entries: their ids are new). */
function rollups(path: string, rebuilt = false): Rows {
  const rows = tables(derivedPath(path)) as Rows;
  if (rebuilt) delete rows.inventory;
  return rows;
}

/** Events of one tenant over two hours and two customers, `n` of them, from `from`: reads, and every third a put (a third of those deletes). */
async function ingest(store: SqliteStore, tenantId: number, n: number, from = 0): Promise<void> {
  const events = Array.from({ length: n }, (_, k) => {
    const i = from + k;
    const at = T0 + ((i * 97) % 7200);
    const fields = { customerId: `c${i % 2}`, bytes: i + 1 };
    const event: NormalizedEvent =
      i % 3 !== 0 ? getObject(at, fields)
      : i % 9 === 0 ? ({ action: 'DeleteObject', timestamp: at, provider: 'aws', bucket: 'b', objectKey: `k${(i * 7) % 40}`, customerId: fields.customerId } as unknown as NormalizedEvent)
      : ({ action: 'PutObject', timestamp: at, provider: 'aws', bucket: 'b', objectKey: `k${i % 40}`, ...fields } as unknown as NormalizedEvent);
    return { tenantId, receivedAt: T0 + 7200, event };
  });
  await store.commit({ events, quarantine: [] });
}

/** The inventory agrees with the events (verify finds nothing), and has entries. */
async function assertInventory(store: SqliteStore, tenantId: number): Promise<void> {
  assert.deepEqual(await store.inventory.verify(tenantId), []);
  assert.ok((await store.inventory.objects(tenantId, { bucket: 'b', at: T0 + 7200, includeVersions: false, limit: 100 })).length > 0);
}

/** Every shape's rollups agree with the events, day by day. */
async function assertAgree(store: SqliteStore, tenantId: number): Promise<void> {
  for (const check of await store.usage.reconcile(tenantId, DAY, DAY + 1)) {
    for (const shape of SHAPES) assert.deepEqual(check.rollups[shape.name], check.events, shape.name);
  }
}

/** A new store at `path` with `n` events of a new tenant, folded and applied, closed: its tenant and derived rows (those a rebuild gives again). */
async function filled(path: string, n: number): Promise<{ tenantId: number; rows: Rows }> {
  const store = await openSqliteStore({ path });
  try {
    const { tenantId } = await newTenant(store);
    await ingest(store, tenantId, n);
    await store.usage.catchUp();
    await store.inventory.catchUp();
    return { tenantId, rows: rollups(path, true) };
  } finally {
    await store.close();
  }
}

/** Opened, the store's derived file is made afresh: every one of its `events` events waits, and once caught up it holds `rows` again. */
async function assertRefilled(path: string, tenantId: number, events: number, rows: Rows): Promise<void> {
  const store = await openSqliteStore({ path });
  try {
    assert.equal((await store.usage.lag()).pendingEvents, events, 'every event waits for its fold');
    await store.usage.catchUp();
    await store.inventory.catchUp();
    assert.deepEqual(rollups(path, true), rows);
    await assertAgree(store, tenantId);
    await assertInventory(store, tenantId);
  } finally {
    await store.close();
  }
}

const removeDerived = (path: string) => {
  for (const suffix of ['', '-wal', '-shm']) rmSync(derivedPath(path) + suffix, { force: true });
};

/** The tenant's requests on DAY as the tenant_day rollup counts them. */
async function folded(store: SqliteStore, tenantId: number): Promise<bigint> {
  const [check] = await store.usage.reconcile(tenantId, DAY, DAY + 1);
  return check!.rollups.tenant_day![MEASURES.indexOf('requests')]!;
}

/**
 * Two stores on one file, as two processes open it (the server, and a CLI command beside it: its
 * busy timeout `cliBusyMs`), and a connection of this test's own to `sideFile`.
 */
async function besideServer(path: string, cliBusyMs: number, sideFile: string, run: (server: SqliteStore, cli: SqliteStore, side: Database.Database) => Promise<void>): Promise<void> {
  const server = await openSqliteStore({ path });
  const cli = await openSqliteStore({ path, busyTimeoutMs: cliBusyMs });
  const side = new Database(sideFile);
  try {
    await run(server, cli, side);
  } finally {
    side.close();
    await cli.close();
    await server.close();
  }
}

describe('SQLite derived file', () => {
  const dirs: string[] = [];
  const dir = () => {
    const d = tempDir();
    dirs.push(d);
    return d;
  };
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('migration 14 moves the rollups and the usage cursor from a store made before it, rows unchanged', async () => {
    const path = join(dir(), 'old.db');
    const db = new Database(path);
    migrate(db, MIGRATIONS.slice(0, 2), () => T0);
    db.exec(`INSERT INTO tenants (id, name, created_at) VALUES (1, 'old', ${T0});
      INSERT INTO dict (id, value) VALUES (1, 'aws'), (2, 'c1'), (3, 'c2');
      INSERT INTO events (seq, tenant, timestamp, received_after, action, provider, customer, bytes) VALUES
        (1, 1, ${T0}, 5, 1, 1, 2, 100), (2, 1, ${T0 + 3600}, 5, 2, 1, NULL, 7), (3, 1, ${T0 + 60}, 5, 1, 1, 3, 1000);
      UPDATE counters SET value = 3 WHERE name = 'event_seq';`);
    // Schema 13: migrations 4 and 8 fill the rollups from the events, 6 puts the cursor at the last seq.
    migrate(db, MIGRATIONS.slice(0, 13), () => T0);
    // Two events stored after, not folded yet.
    db.exec(`INSERT INTO events (seq, tenant, timestamp, received_after, action, provider, customer, bytes) VALUES
        (4, 1, ${T0 + 120}, 5, 1, 1, 2, 5), (5, 1, ${T0 + 3700}, 5, 1, 1, NULL, 9);
      UPDATE counters SET value = 5 WHERE name = 'event_seq';`);
    db.close();
    const before = tables(path);
    for (const shape of SHAPES) assert.ok(before[shape.table]!.length > 0, shape.table);

    const store = await openSqliteStore({ path });
    try {
      assert.deepEqual(await store.usage.lag().then((l) => l.pendingEvents), 2, 'the cursor moved with the rollups');
      assert.deepEqual(rollups(path), before, 'every rollup row moved unchanged');
      const events = tables(path);
      for (const t of DERIVED_TABLES) assert.equal(events[t], null, `${t} is gone from the events file`);
      await store.usage.catchUp();
      assert.equal((await store.usage.lag()).pendingEvents, 0);
      await assertAgree(store, 1);
    } finally {
      await store.close();
    }
  });

  it('migration 14 moves the inventory, its pending outbox rows and the rebuild counts as well, and the ids of new outbox rows never go back', async () => {
    const path = join(dir(), 'moved.db');
    let store = await openSqliteStore({ path });
    let tenantId = 0;
    let before: Rows;
    let lags: unknown;
    try {
      tenantId = (await newTenant(store)).tenantId;
      await ingest(store, tenantId, 300);
      await store.usage.catchUp();
      await store.inventory.catchUp();
      await store.usage.rebuild(tenantId, T0 / 3600, T0 / 3600 + 2);
      await store.inventory.rebuild(tenantId);
      // Pending, both: stored after the catch-ups.
      await ingest(store, tenantId, 90, 300);
      before = rollups(path);
      lags = [(await store.usage.lag()).pendingEvents, (await store.inventory.lag()).pending];
    } finally {
      await store.close();
    }
    for (const t of ['inventory', 'inventory_hours', 'inventory_log', 'rebuilds']) assert.ok(before[t]!.length > 0, t);
    const db = new Database(path);
    moveDerivedBack(db, path);
    db.close();
    store = await openSqliteStore({ path });
    try {
      assert.deepEqual(rollups(path), before, 'every row moved unchanged');
      const events = tables(path);
      for (const t of DERIVED_TABLES) assert.equal(events[t], null, `${t} is gone from the events file`);
      assert.deepEqual([(await store.usage.lag()).pendingEvents, (await store.inventory.lag()).pending], lags, 'what was pending still is');
      assert.deepEqual(lags, [90, 1]);
      await assertInventory(store, tenantId);
      await store.usage.catchUp();
      await assertAgree(store, tenantId);
      // Every outbox row applied and deleted (as the derived thread's purge deletes them): a new one
      // still takes an id above them, or it would count as applied.
      await store.inventory.catchUp();
      const outbox = new Database(path);
      outbox.pragma('busy_timeout = 5000');
      attachDerived(outbox, path);
      const applied = () => outbox.prepare("SELECT value FROM derived_counters WHERE name = 'inventory_outbox_id'").pluck().get() as number;
      const last = applied();
      assert.ok(last > 0);
      outbox.prepare('DELETE FROM inventory_outbox WHERE id <= ?').run(last);
      await ingest(store, tenantId, 9, 390);
      assert.equal(outbox.prepare('SELECT count(*) FROM inventory_outbox WHERE id > ?').pluck().get(last), 1, 'the new row is pending');
      assert.equal((await store.inventory.lag()).pending, 1);
      outbox.close();
      await assertInventory(store, tenantId);
    } finally {
      await store.close();
    }
  });

  it('a missing derived file is made afresh and refilled from the events', async () => {
    const path = join(dir(), 'lost.db');
    const { tenantId, rows: kept } = await filled(path, 300);
    removeDerived(path);
    await assertRefilled(path, tenantId, 300, kept);
    assert.ok(existsSync(derivedPath(path)));
  });

  it("another store's derived file, or one ahead of its events file (restored from an older backup), is made afresh", async () => {
    const d = dir();
    const path = join(d, 'a.db');
    const other = join(d, 'b.db');
    const backup = join(d, 'a-backup.db');
    const { tenantId, rows: early } = await filled(path, 100);
    copyFileSync(path, backup);
    const store = await openSqliteStore({ path });
    try {
      await ingest(store, tenantId, 50, 100);
      await store.usage.catchUp();
      await store.inventory.catchUp();
      assert.notDeepEqual(rollups(path, true), early);
    } finally {
      await store.close();
    }
    // The events file as the backup had it, the derived file as it is now: 50 events ahead.
    copyFileSync(backup, path);
    await assertRefilled(path, tenantId, 100, early);

    // Another store's derived file, not ahead of this one's events (same seqs), other rows.
    const b = await openSqliteStore({ path: other });
    try {
      const t = (await newTenant(b)).tenantId;
      await ingest(b, t, 100, 7);
      await b.usage.catchUp();
      await b.inventory.catchUp();
    } finally {
      await b.close();
    }
    removeDerived(path);
    copyFileSync(derivedPath(other), derivedPath(path));
    await assertRefilled(path, tenantId, 100, early);
  });

  it('commits go on while a fold waits for the derived file', async () => {
    const path = join(dir(), 'held.db');
    const store = await openSqliteStore({ path, busyTimeoutMs: 4000 });
    const side = new Database(derivedPath(path));
    try {
      const { tenantId } = await newTenant(store);
      await ingest(store, tenantId, 10);
      // Another connection holds the derived file's write lock: the fold waits for it.
      side.exec('BEGIN IMMEDIATE');
      let folded = false;
      const catchUp = store.usage.catchUp().then(() => {
        folded = true;
      });
      // The fold has begun waiting.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const started = Date.now();
      for (let i = 0; i < 5; i++) await ingest(store, tenantId, 10, 10 + i * 10);
      assert.ok(Date.now() - started < 2000, `five commits took ${Date.now() - started} ms`);
      assert.equal(folded, false, 'the fold is still waiting');
      side.exec('COMMIT');
      await catchUp;
      await store.usage.catchUp();
      assert.equal((await store.usage.lag()).pendingEvents, 0);
      await assertAgree(store, tenantId);
    } finally {
      side.close();
      await store.close();
    }
  });

  it('two processes folding at once (the server and `usage verify`) count each event once', async () => {
    const path = join(dir(), 'two.db');
    await besideServer(path, 4000, derivedPath(path), async (server, cli, side) => {
      const { tenantId } = await newTenant(server);
      // The server's writer sums these: its fold writes its sums; the other one folds them from the events.
      await ingest(server, tenantId, 40);
      // Both folds read the cursor, then wait for the derived file's write lock; each gets it in turn.
      side.exec('BEGIN IMMEDIATE');
      const folds = Promise.all([server.usage.catchUp(), cli.usage.catchUp()]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      side.exec('COMMIT');
      await folds;
      assert.equal(await folded(server, tenantId), 40n, 'each event counted once');
      await assertAgree(server, tenantId);
    });
  });

  it("a rebuild succeeds while another process's folds commit to the derived file", async () => {
    const path = join(dir(), 'rebuild.db');
    const store = await openSqliteStore({ path, busyTimeoutMs: 10_000 });
    // The server, ingesting and folding, while `usage rebuild` runs in another process (`store`).
    const server = await openSqliteStore({ path, busyTimeoutMs: 10_000 });
    try {
      const { tenantId } = await newTenant(store);
      for (let i = 0; i < 20; i++) await ingest(store, tenantId, 10_000, i * 10_000);
      await store.usage.catchUp();
      let settled = false;
      const rebuilt = store.usage.rebuild(null, DAY * 24, DAY * 24 + 24).finally(() => {
        settled = true;
      });
      let folds = 0;
      for (; !settled; folds++) {
        await ingest(server, tenantId, 1, 200_000 + folds);
        await server.usage.catchUp();
      }
      await rebuilt;
      assert.equal(await folded(store, tenantId), BigInt(200_000 + folds));
      await assertAgree(store, tenantId);
    } finally {
      await server.close();
      await store.close();
    }
  });

  it("a fold takes no lock of the events file: it runs while another connection holds the events file's write lock", async () => {
    const path = join(dir(), 'events-held.db');
    const store = await openSqliteStore({ path, busyTimeoutMs: 3000 });
    const side = new Database(path);
    try {
      const { tenantId } = await newTenant(store);
      await ingest(store, tenantId, 50);
      side.exec('BEGIN IMMEDIATE');
      const started = Date.now();
      await store.usage.catchUp();
      assert.ok(Date.now() - started < 1500, `the fold took ${Date.now() - started} ms`);
      side.exec('COMMIT');
      assert.equal((await store.usage.lag()).pendingEvents, 0);
      await assertAgree(store, tenantId);
    } finally {
      side.close();
      await store.close();
    }
  });

  it('a derived file behind its events file is kept, and made afresh once outbox rows it had not applied were purged since', async () => {
    const d = dir();
    const path = join(d, 'behind.db');
    const saved = join(d, 'derived-backup');
    const { tenantId } = await filled(path, 99);
    copyFileSync(derivedPath(path), saved);
    // Events and their outbox rows past the copy; the usage folded, the inventory not applied (its rows stay).
    const store = await openSqliteStore({ path });
    try {
      await ingest(store, tenantId, 30, 99);
      await store.usage.catchUp();
    } finally {
      await store.close();
    }
    // Restored, opened: `pending` events wait for the fold; caught up, usage and inventory agree with the events.
    const restored = async (pending: number, why: string) => {
      copyFileSync(saved, derivedPath(path));
      const opened = await openSqliteStore({ path });
      try {
        assert.equal((await opened.usage.lag()).pendingEvents, pending, why);
        await opened.usage.catchUp();
        await opened.inventory.catchUp();
        await assertAgree(opened, tenantId);
        await assertInventory(opened, tenantId);
      } finally {
        await opened.close();
      }
    };
    await restored(30, 'kept: only the events past the copy wait');
    // Now the copy is restored after the rows it lacks were applied and purged: it cannot catch up from the outbox.
    await restored(129, 'made afresh: every event waits');
  });

  it("two processes' inventory catch-ups at once (the server and `usage verify`) both succeed, each outbox row applied once", async () => {
    const path = join(dir(), 'two-inventory.db');
    await besideServer(path, 4000, derivedPath(path), async (server, cli, side) => {
      const { tenantId } = await newTenant(server);
      await ingest(server, tenantId, 60);
      // Both wait for the derived file's write lock; each gets it in turn.
      side.exec('BEGIN IMMEDIATE');
      const both = Promise.all([server.inventory.catchUp(), cli.inventory.verify(tenantId)]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      side.exec('COMMIT');
      const [, differences] = await both;
      assert.deepEqual(differences, []);
      await assertInventory(server, tenantId);
    });
  });
});
