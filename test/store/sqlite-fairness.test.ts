/**
 * Issue 11 on the SQLite store: one tenant cannot slow the writer for everyone with colliding object
 * keys, nor hold the event loop with reads, nor learn from a read's work whether another tenant
 * stored a value; each test reproduces the attack first.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openConnection } from '../../src/store/sqlite/connection.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import { migrate } from '../../src/store/sqlite/migrate.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { prepareFiles } from '../../src/store/sqlite/store.js';
import { MAX_PROBES, ObjectKeyIds, objectKeyHash, prepareObjectKeys } from '../../src/store/sqlite/object-keys.js';
import { ReadBudget } from '../../src/store/sqlite/read-budget.js';
import { EventReader, edgeSql, pageSql } from '../../src/store/sqlite/read-events.js';
import { ReaderPool } from '../../src/store/sqlite/reader-pool.js';
import { InvalidCursorError, ReadAbortedError, ReadTimeoutError } from '../../src/store/types.js';
import type { EventToStore } from '../../src/store/types.js';
import { collidingKeys, oldObjectKeyHash } from '../support/colliding-keys.js';
import { T0, getObject, listAll, newTenant } from './contract.js';

const ID_MASK = 0x7fffffff;
/** How far past its hash a key's id is: the probes its insert cost, less one. */
const distance = (id: number, hash: number): number => (id - hash) & ID_MASK;

describe('SQLite fairness and isolation (issue 11)', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bm-fair-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('object keys computed to collide under the old hash cost the writer no probes under the keyed one', async () => {
    const keys = collidingKeys(2000);
    assert.equal(new Set(keys.map(oldObjectKeyHash)).size, 1, 'the attack: every key has the same old hash');
    // Under the old hash, key n probes past the n keys before it: n(n-1)/2 probes for n keys. The
    // writer now gives up on a key past MAX_PROBES (it would fail its unit) rather than probe on.
    const old = openConnection(join(dir, 'old-hash.db'), 1000);
    prepareFiles(old, old.name, () => T0);
    const oldIds = new ObjectKeyIds(oldObjectKeyHash);
    const statements = prepareObjectKeys(old);
    const first = keys.slice(0, MAX_PROBES);
    const oldProbes = old.transaction(() => first.reduce((sum, key) => sum + distance(oldIds.id(statements, key, []), oldObjectKeyHash(key)), 0))();
    assert.equal(oldProbes, (first.length * (first.length - 1)) / 2);
    assert.throws(() => oldIds.id(statements, keys[MAX_PROBES]!, []), /not placed within 256 probes/);
    old.close();

    const path = join(dir, 'keyed.db');
    const store = await openSqliteStore({ path });
    try {
      const noisy = await newTenant(store);
      const events = keys.map((objectKey, i): EventToStore => ({ tenantId: noisy.tenantId, receivedAt: T0, event: getObject(T0 + i, { objectKey }) }));
      await store.commit({ events, quarantine: [] });
      const db = new Database(path, { readonly: true });
      const hash = objectKeyHash(db);
      const rows = db.prepare('SELECT id, value FROM object_keys').all() as { id: number; value: string }[];
      db.close();
      assert.equal(rows.length, keys.length);
      // 2,000 keys spread over 2^31 ids: a probe past a taken id is rare, a run of them does not happen.
      const probes = rows.reduce((sum, { id, value }) => sum + distance(id, hash(value)), 0);
      assert.ok(probes <= 3, `the same keys cost ${probes} extra probes in all (old hash: ${oldProbes})`);
      assert.deepEqual((await listAll(store, noisy.tenantId)).map((e) => e.objectKey).reverse(), keys);
    } finally {
      await store.close();
    }
  });

  it('two databases hash the same key differently (the secret is per database)', async () => {
    const hashes = await Promise.all(['one.db', 'two.db'].map(async (name) => {
      const db = openConnection(join(dir, name), 1000);
      prepareFiles(db, db.name, () => T0);
      const hash = objectKeyHash(db);
      db.close();
      return collidingKeys(20).map(hash);
    }));
    assert.notDeepEqual(hashes[0], hashes[1]);
  });

  describe('with a large tenant', () => {
    const BIG = 200_000;
    let path = '';
    let store: SqliteStore;
    let big = 0;
    let small = 0;
    before(async () => {
      path = join(dir, 'big.db');
      // A budget no read here reaches, however busy the machine: these tests are not about the budget.
      store = await openSqliteStore({ path, readBudgetMs: 600_000 });
      big = (await newTenant(store)).tenantId;
      small = (await newTenant(store)).tenantId;
      for (let done = 0; done < BIG; done += 10_000) {
        const events = Array.from({ length: 10_000 }, (_, i): EventToStore => ({ tenantId: big, receivedAt: T0, event: getObject(T0 + ((done + i) % 1000), { customerId: 'big-customer' }) }));
        await store.commit({ events, quarantine: [] });
      }
      await store.commit({ events: [0, 1, 2].map((i) => ({ tenantId: small, receivedAt: T0, event: getObject(T0 + i) })), quarantine: [] });
    });
    after(async () => {
      await store.close();
    });

    it('a read of many rows runs off the event loop: the loop keeps turning while it reads', async () => {
      // A time range of all the big tenant's events and a customer none of them has: every row is read.
      let turns = 0;
      let reading = true;
      const read = store.listEvents(big, { from: T0, to: T0 + 1000, customerId: 'nobody', limit: 10 }).finally(() => {
        reading = false;
      });
      while (reading) {
        await setImmediate();
        turns++;
      }
      assert.deepEqual(await read, { events: [], nextCursor: null });
      assert.ok(turns > 1, `the event loop turned ${turns} times during the read`);
    });

    it('a read past its budget is stopped and answered with ReadTimeoutError; the store reads on', async () => {
      const hurried = await openSqliteStore({ path, readBudgetMs: 5, readers: 1 });
      try {
        await assert.rejects(hurried.listEvents(big, { customerId: 'nobody', limit: 10 }), ReadTimeoutError);
        await assert.rejects(hurried.listEvents(big, { from: T0, to: T0 + 1000, customerId: 'nobody', limit: 10 }), ReadTimeoutError);
      } finally {
        await hurried.close();
      }
      assert.equal((await store.listEvents(small, { limit: 10 })).events.length, 3);
    });

    it("one tenant's heavy reads leave a reader thread to the others", async () => {
      const done: string[] = [];
      const heavy = Array.from({ length: 3 }, (_, i) =>
        store.listEvents(big, { from: T0, to: T0 + 1000, customerId: 'nobody', limit: 10 }).then(() => void done.push(`big ${i}`)),
      );
      await store.listEvents(small, { customerId: 'nobody', limit: 10 });
      done.push('small');
      await Promise.all(heavy);
      // With two threads and first come, first served, the small read would wait for two heavy ones.
      assert.deepEqual(done.slice(0, 1), ['small'], `finished in this order: ${done.join(', ')}`);
    });

    it('a read whose caller left is dropped if it waits, and has its thread replaced if it runs (issue 17)', async () => {
      const pool = new ReaderPool({ path, busyTimeoutMs: 5000 }, 2);
      try {
        const read = (signal: AbortSignal) => pool.run('events.page', { tenantId: big, query: { from: T0, to: T0 + 1000, customerId: 'nobody', limit: 10 } }, big, 600_000, signal);
        const [running, waiting, kept] = [new AbortController(), new AbortController(), new AbortController()];
        // The tenant's one thread: the first read is sent to it at once, the others wait.
        const first = read(running.signal);
        const second = read(waiting.signal);
        const third = read(kept.signal);
        assert.deepEqual(pool.counts(), { waiting: 2, abandonedWaiting: 0, abandonedRunning: 0 });
        waiting.abort();
        assert.deepEqual(pool.counts(), { waiting: 1, abandonedWaiting: 1, abandonedRunning: 0 });
        await assert.rejects(second, ReadAbortedError);
        running.abort();
        // A new thread took the tenant's turn at once: the third read no longer waits.
        assert.deepEqual(pool.counts(), { waiting: 0, abandonedWaiting: 1, abandonedRunning: 1 });
        await assert.rejects(first, ReadAbortedError);
        assert.deepEqual(await third, { events: [], nextCursor: null });
        // A signal already aborted: not run.
        await assert.rejects(read(AbortSignal.abort()), ReadAbortedError);
        assert.deepEqual(pool.counts(), { waiting: 0, abandonedWaiting: 2, abandonedRunning: 1 });
      } finally {
        await pool.close();
      }
    });

    it("cursors are sealed to their tenant: another tenant's, or an altered one, is refused, and none shows a position", async () => {
      const first = await store.listEvents(small, { limit: 1 });
      const again = await store.listEvents(small, { limit: 1 });
      assert.ok(first.nextCursor !== null && again.nextCursor !== null);
      // The same position sealed twice: nothing in the text stays the same to count with.
      assert.notEqual(first.nextCursor, again.nextCursor);
      assert.equal((await store.listEvents(small, { limit: 10, cursor: first.nextCursor })).events.length, 2);
      await assert.rejects(store.listEvents(big, { limit: 10, cursor: first.nextCursor }), InvalidCursorError);
      const altered = first.nextCursor.slice(0, 20) + (first.nextCursor[20] === 'A' ? 'B' : 'A') + first.nextCursor.slice(21);
      await assert.rejects(store.listEvents(small, { limit: 10, cursor: altered }), InvalidCursorError);
      // A cursor of a listing in arrival order does not continue a time range.
      await assert.rejects(store.listEvents(small, { limit: 10, from: T0, cursor: first.nextCursor }), InvalidCursorError);
    });

    it("every step reads the tenant's own index, in order, without sorting (a page never re-reads earlier ones)", () => {
      const db = new Database(path, { readonly: true });
      const plan = (sql: string) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => 1)) as { detail: string }[]).map((r) => r.detail).join('; ');
      const plans = {
        seq: [edgeSql('seq'), pageSql('seq', [], false), pageSql('seq', ['customer = ?'], true)].map(plan),
        range: [edgeSql('range'), pageSql('range', [], false), pageSql('range', ['action = ?', 'customer = ?'], true)].map(plan),
      };
      db.close();
      for (const p of plans.seq) assert.match(p, /^SEARCH events USING (COVERING )?INDEX events_tenant_seq \(tenant=\? AND (rowid>\? AND )?rowid<\?\)$/);
      for (const p of plans.range) assert.match(p, /^SEARCH events USING (COVERING )?INDEX events_tenant_time \(tenant=\? AND .*\(timestamp,rowid\)<\(\?,\?\)\)$/);
    });

    it("a customerId only another tenant stored reads exactly like one nobody stored (no existence oracle)", () => {
      // Every statement the read runs, with its parameters: the same for both values.
      const trace = (customerId: string): string[] => {
        const run: string[] = [];
        const db = new Database(path, { readonly: true, verbose: (sql) => void run.push(String(sql)) });
        const reader = new EventReader(db);
        run.length = 0;
        for (const query of [{ limit: 10 }, { limit: 10, from: T0, to: T0 + 3 }]) {
          assert.deepEqual(reader.list(small, { ...query, customerId }, new ReadBudget(Infinity, 0)), { events: [], nextCursor: null });
        }
        db.close();
        return run.map((sql) => sql.replaceAll(`'${customerId}'`, "'?'").replace(/customer = -?[\d.]+/, 'customer = <id>'));
      };
      const elsewhere = trace('big-customer');
      const nowhere = trace('never-stored-by-anyone');
      assert.ok(elsewhere.some((sql) => sql.includes('FROM events')), 'the read walks the tenant\'s rows');
            assert.deepEqual(elsewhere, nowhere);
    });
  });
});

describe('SQLite migration 3 upgrades a database made before it', () => {
  it('keeps the ids, cursor-free listing and object keys of stored events; new ids continue above them per tenant', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bm-upgrade-'));
    const path = join(dir, 'old.db');
    try {
      // A version-2 database as the earlier release left it: global seqs 1..5, keys under the old hash.
      const db = openConnection(path, 1000);
      migrate(db, MIGRATIONS.slice(0, 2), () => T0);
      db.exec(`INSERT INTO tenants (id, name, created_at) VALUES (1, 'a', ${T0}), (2, 'b', ${T0});
        INSERT INTO dict (id, value) VALUES (1, 'aws'), (2, 'b');
        UPDATE counters SET value = 5 WHERE name = 'event_seq';`);
      db.prepare('INSERT INTO object_keys (id, value) VALUES (?, ?)').run(oldObjectKeyHash('old/key'), 'old/key');
      const insert = db.prepare(`INSERT INTO events (seq, tenant, timestamp, received_after, action, provider, bucket, object_key, bytes, billable)
        VALUES (?, ?, ${T0}, 0, 1, 1, 2, ${oldObjectKeyHash('old/key')}, 1, 1)`);
      for (const [seq, tenant] of [[1, 1], [2, 2], [3, 1], [4, 2], [5, 2]]) insert.run(seq, tenant);
      db.close();

      const store = await openSqliteStore({ path });
      try {
        const before = (await listAll(store, 1)).map((e) => [e.eventId, e.objectKey]);
        assert.deepEqual(before, [['bm-0000000000003', 'old/key'], ['bm-0000000000001', 'old/key']]);
        const fresh = await newTenant(store);
        const outcomes = await store.commit({
          events: [1, 2, 1, fresh.tenantId].map((tenantId) => ({ tenantId, receivedAt: T0, event: getObject(T0, { objectKey: 'old/key' }) })),
          quarantine: [],
        });
        // Tenants 1 and 2 continue above every seq handed out before (5); a new tenant starts at 1.
        assert.deepEqual(outcomes.map((o) => o.eventId), ['bm-0000000000006', 'bm-0000000000006', 'bm-0000000000007', 'bm-0000000000001']);
        assert.deepEqual((await listAll(store, 1)).map((e) => [e.eventId, e.objectKey]), [['bm-0000000000007', 'old/key'], ['bm-0000000000006', 'old/key'], ...before]);
      } finally {
        await store.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
