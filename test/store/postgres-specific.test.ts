/**
 * PostgreSQL-only behaviour the shared contract cannot express: concurrent migrations, partitions,
 * several processes (separate pools) deduplicating against each other, killed connections and
 * network outages. Needs TEST_DATABASE_URL; each test works in its own scratch database.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Client, Pool } from 'pg';
import type { EventOf } from '../../src/events/catalogue.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { migrate } from '../../src/store/postgres/migrate.js';
import { MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { ensurePartitions, monthPartition } from '../../src/store/postgres/partitions.js';
import { InvalidCursorError, StoreUnavailableError, type EventToStore, type Store } from '../../src/store/types.js';
import { dropScratchDatabases, scratchDatabase, withPg } from '../support/scratch.js';
import { startTcpProxy, viaProxy } from '../support/tcp-proxy.js';

const BASE_URL = process.env.TEST_DATABASE_URL;
const SKIP = BASE_URL ? false : 'TEST_DATABASE_URL is not set: PostgreSQL-specific tests SKIPPED';

function admin<T>(run: (client: Client) => Promise<T>, url = BASE_URL!): Promise<T> {
  return withPg(url, run);
}

after(dropScratchDatabases);

/** A pool whose connections may be cut (DROP DATABASE ... WITH (FORCE)) without crashing the run. */
function quietPool(url: string): Pool {
  const pool = new Pool({ connectionString: url, max: 1 });
  pool.on('error', () => {});
  return pool;
}

const NOW = Math.floor(Date.now() / 1000);

function event(eventId: string | undefined, fields: Partial<EventOf<'GetObject'>> = {}): EventToStore {
  const record: EventOf<'GetObject'> = { action: 'GetObject', timestamp: NOW, provider: 'aws', bucket: 'b', objectKey: 'k', bytes: 1, ...fields };
  if (eventId !== undefined) record.eventId = eventId;
  return { tenantId: 1, receivedAt: NOW, event: record };
}

function shuffled<T>(items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

describe('PostgreSQL store specifics', { skip: SKIP }, () => {
  it('applies each migration exactly once when 4 processes start at the same time', async () => {
    const { url } = await scratchDatabase();
    // A probe migration that would leave two rows if it ever ran twice.
    const probe = { version: 1_000_000, name: 'probe', sql: 'CREATE TABLE probe (n integer); INSERT INTO probe VALUES (1)' };
    const pools = Array.from({ length: 4 }, () => quietPool(url));
    try {
      const results = await Promise.all(pools.map((pool) => migrate(pool, [...MIGRATIONS, probe])));
      const applied = results.flatMap((result) => result.applied).sort((a, b) => a - b);
      assert.deepEqual(applied, [...MIGRATIONS.map((m) => m.version), probe.version]);
      const { rows } = await admin((client) => client.query<{ n: string }>('SELECT count(*) AS n FROM probe'), url);
      assert.equal(rows[0]?.n, '1');
      // Another start later finds nothing to do, and reports the version it does not know.
      assert.deepEqual(await migrate(pools[0] as Pool), { applied: [], unknown: [probe.version] });
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it('opens from 4 concurrent processes on an empty database, and only one creates the first key', async () => {
    const { url } = await scratchDatabase();
    const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgresStore({ url, poolMax: 2 })));
    try {
      const { rows } = await admin((client) => client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version'), url);
      assert.deepEqual(rows.map((row) => row.version), MIGRATIONS.map((m) => m.version));
      const created = await Promise.all(
        stores.map((store, i) => store.keys.createIfNone({ id: `first-${i}`, tenantName: 'default', hash: randomBytes(32), createdAt: NOW })),
      );
      assert.equal(created.filter((key) => key !== undefined).length, 1);
      assert.equal((await stores[0]?.keys.list())?.length, 1);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it('creates partitions ahead and routes old timestamps to the default partition', async () => {
    const { url } = await scratchDatabase();
    const store = await openPostgresStore({ url });
    try {
      const partitions = await admin(
        (client) =>
          client.query<{ name: string; bound: string }>(
            `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass`,
          ),
        url,
      );
      const byName = new Map(partitions.rows.map((row) => [row.name, row.bound]));
      for (const offset of [0, 1, 2]) {
        const month = monthPartition(NOW, offset);
        assert.equal(byName.get(month.name), `FOR VALUES FROM ('${month.from}') TO ('${month.to}')`, month.name);
      }
      assert.equal(byName.get('events_default'), 'DEFAULT');

      const old = Date.UTC(2001, 0, 15) / 1000;
      const outcomes = await store.commit({ events: [event('now'), event('old', { timestamp: old })], quarantine: [] });
      assert.deepEqual(outcomes, [{ eventId: 'now', duplicate: false }, { eventId: 'old', duplicate: false }]);
      const where = await admin(
        (client) => client.query<{ event_id: string; part: string }>('SELECT event_id, tableoid::regclass::text AS part FROM events ORDER BY seq'),
        url,
      );
      assert.deepEqual(where.rows, [
        { event_id: 'now', part: monthPartition(NOW).name },
        { event_id: 'old', part: 'events_default' },
      ]);
      const page = await store.listEvents(1, { limit: 10, to: old + 1 });
      assert.deepEqual(page.events.map((e) => e.eventId), ['old']);
    } finally {
      await store.close();
    }
  });

  it('moves rows out of the default partition when their month is created later', async () => {
    const { url } = await scratchDatabase();
    const store = await openPostgresStore({ url });
    const pool = quietPool(url);
    try {
      const far = monthPartition(NOW, 12);
      await store.commit({ events: [event('far', { timestamp: far.from + 60 })], quarantine: [] });
      assert.deepEqual(await ensurePartitions(pool, far.from, 0), [far.name]);
      assert.deepEqual(await ensurePartitions(pool, far.from, 0), [], 'second run creates nothing');
      const { rows } = await admin((client) => client.query<{ part: string }>('SELECT tableoid::regclass::text AS part FROM events'), url);
      assert.deepEqual(rows, [{ part: far.name }]);
      const again = await store.commit({ events: [event('far', { timestamp: far.from + 60 })], quarantine: [] });
      assert.deepEqual(again, [{ eventId: 'far', duplicate: true }]);
    } finally {
      await pool.end();
      await store.close();
    }
  });

  // Units take one of two write paths by size (encode.ts): each of these runs once per path.
  for (const [path, copyMinEvents] of [['one statement', Infinity], ['COPY', 1]] as const) {
    it(`stores each eventId exactly once when two processes commit the same ids concurrently (${path})`, async () => {
      const { url } = await scratchDatabase();
      const [a, b] = await Promise.all([openPostgresStore({ url, poolMax: 4, copyMinEvents }), openPostgresStore({ url, poolMax: 4, copyMinEvents })]);
      assert.ok(a && b);
      try {
        const ids = Array.from({ length: 2000 }, (_, i) => `shared-${i}`);
        const stored = new Map<string, number>();
        // Each process commits every id, in its own random order and unit boundaries, 4 units in flight.
        const run = async (store: Store) => {
          const order = shuffled(ids);
          const units: string[][] = [];
          for (let i = 0; i < order.length; ) {
            const size = 1 + Math.floor(Math.random() * 200);
            units.push(order.slice(i, i + size));
            i += size;
          }
          const inFlight = Array.from({ length: 4 }, async () => {
            for (let unit = units.shift(); unit !== undefined; unit = units.shift()) {
              // Repeat one id inside the unit too: only the first occurrence may count.
              const events = [...unit, unit[0] as string].map((id) => event(id));
              const outcomes = await store.commit({ events, quarantine: [] });
              assert.equal(outcomes.at(-1)?.duplicate, true);
              for (const outcome of outcomes.slice(0, -1)) {
                if (!outcome.duplicate) stored.set(outcome.eventId, (stored.get(outcome.eventId) ?? 0) + 1);
              }
            }
          });
          await Promise.all(inFlight);
        };
        await Promise.all([run(a), run(b)]);
        assert.equal(stored.size, ids.length, 'every id reported stored by someone');
        assert.deepEqual([...stored.values()].filter((n) => n !== 1), [], 'no id reported stored twice');
        const { rows } = await admin(
          (client) => client.query<{ n: string; distinct: string }>('SELECT count(*) AS n, count(DISTINCT event_id) AS distinct FROM events'),
          url,
        );
        assert.deepEqual(rows[0], { n: String(ids.length), distinct: String(ids.length) });
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it(`never reports a false success when server connections are killed, and recovers by itself (${path})`, async () => {
      const { name, url } = await scratchDatabase();
      const store = await openPostgresStore({ url, poolMax: 4, copyMinEvents });
      try {
        const acknowledged: string[] = [];
        let failures = 0;
        let stop = false;
        let n = 0;
        const writers = Array.from({ length: 4 }, async (_, w) => {
          while (!stop) {
            const ids = Array.from({ length: 50 }, () => `w${w}-${n++}`);
            try {
              await store.commit({ events: ids.map((id) => event(id)), quarantine: [] });
              acknowledged.push(...ids);
            } catch (err) {
              assert.ok(err instanceof StoreUnavailableError, `commit rejected with ${String(err)}`);
              assert.ok(err.cause !== undefined, 'the cause is attached');
              failures++;
            }
          }
        });
        for (let kill = 0; kill < 10; kill++) {
          await sleep(50);
          await admin((client) =>
            client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]),
          );
        }
        await sleep(50);
        stop = true;
        await Promise.all(writers);
        assert.ok(acknowledged.length > 0, 'some commits succeeded');
        assert.ok(failures > 0, 'some commits were cut off');

        const { rows } = await admin((client) => client.query<{ event_id: string }>('SELECT event_id FROM events'), url);
        const stored = new Set(rows.map((row) => row.event_id));
        assert.equal(stored.size, rows.length, 'nothing stored twice');
        assert.deepEqual(acknowledged.filter((id) => !stored.has(id)), [], 'every acknowledged event is stored');

        // Recovers without reopening: the pool replaced the killed connections.
        assert.deepEqual(await store.commit({ events: [event('after-kill')], quarantine: [] }), [{ eventId: 'after-kill', duplicate: false }]);
        await store.checkWritable();
      } finally {
        await store.close();
      }
    });
  }

  it('rejects with StoreUnavailableError while the database is unreachable, and recovers when it returns', async () => {
    const { url } = await scratchDatabase();
    const target = new URL(url);
    const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    const store = await openPostgresStore({ url: viaProxy(url, proxy), poolMax: 2, connectTimeoutMs: 1000 });
    try {
      assert.deepEqual(await store.commit({ events: [event('before')], quarantine: [] }), [{ eventId: 'before', duplicate: false }]);

      proxy.cut();
      await assert.rejects(store.commit({ events: [event('during')], quarantine: [] }), StoreUnavailableError);
      await assert.rejects(store.checkWritable(), StoreUnavailableError);
      await assert.rejects(store.listEvents(1, { limit: 10 }), StoreUnavailableError);
      await assert.rejects(store.keys.list(), StoreUnavailableError);

      proxy.restore();
      assert.deepEqual(await store.commit({ events: [event('after')], quarantine: [] }), [{ eventId: 'after', duplicate: false }]);
      await store.checkWritable();
      const page = await store.listEvents(1, { limit: 10 });
      assert.deepEqual(page.events.map((e) => e.eventId), ['after', 'before']);
    } finally {
      await store.close();
      await proxy.close();
    }
  });

  it('fails to open with StoreUnavailableError when nothing listens', async () => {
    // A port that was just free: the proxy's, once closed.
    const closed = await startTcpProxy('127.0.0.1', 1);
    await closed.close();
    await assert.rejects(openPostgresStore({ url: `postgres://postgres@127.0.0.1:${closed.port}/x`, connectTimeoutMs: 500 }), StoreUnavailableError);
  });
  it('says at start when the server has autovacuum off (reads then plan without statistics), and only then', async () => {
    const { url } = await scratchDatabase();
    const autovacuum = await admin(async (c) => (await c.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0]!.autovacuum);
    const warned: object[] = [];
    const store = await openPostgresStore({ url, logger: { warn: (obj, msg) => warned.push({ ...obj, msg }) } });
    try {
      const said = warned.filter((w) => /autovacuum is off/.test((w as { msg: string }).msg));
      assert.equal(said.length, autovacuum === 'off' ? 1 : 0, `autovacuum ${autovacuum}: ${JSON.stringify(warned)}`);
    } finally {
      await store.close();
    }
  });

  it('takes only event cursors the listing could have made: a seq from 1, a timestamp within from/to, written as it writes them', async () => {
    const { url } = await scratchDatabase();
    const store = await openPostgresStore({ url });
    try {
      const { tenantId } = await store.keys.create({ id: `key_${randomBytes(8).toString('hex')}`, tenantName: 'cursors', hash: randomBytes(32), createdAt: NOW });
      await store.commit({ events: [0, 1, 2].map((i) => ({ ...event(undefined, { timestamp: NOW - i }), tenantId })), quarantine: [] });
      const made = (await store.listEvents(tenantId, { limit: 1 })).nextCursor!;
      const seq = BigInt(Number.parseInt(made, 36));
      assert.equal((await store.listEvents(tenantId, { limit: 5, cursor: made })).events.length, 2);
      const ranged = { from: NOW - 2, to: NOW + 1 };
      const madeRanged = (await store.listEvents(tenantId, { ...ranged, limit: 1 })).nextCursor!;
      assert.equal((await store.listEvents(tenantId, { ...ranged, limit: 5, cursor: madeRanged })).events.length, 2);
      const forged = [
        ['0', {}, 'seq 0: no event has it'],
        [`0${made}`, {}, 'a leading zero'],
        [`${(BigInt(NOW + 3600)).toString(36)}.${seq.toString(36)}`, ranged, 'a timestamp past to: the first page again'],
        [`${(BigInt(NOW - 3600)).toString(36)}.${seq.toString(36)}`, ranged, 'a timestamp before from'],
        [`-0.${seq.toString(36)}`, { from: -10 }, 'minus zero'],
      ] as const;
      for (const [cursor, range, why] of forged) {
        await assert.rejects(store.listEvents(tenantId, { ...range, limit: 5, cursor }), InvalidCursorError, why);
      }
    } finally {
      await store.close();
    }
  });

  it('migration 3 keeps the ids of events stored before it; new ids continue above them, per tenant', async () => {
    const { url } = await scratchDatabase();
    const pool = quietPool(url);
    try {
      await migrate(pool, MIGRATIONS.slice(0, 2));
      await pool.query("INSERT INTO tenants (name) VALUES ('a'), ('b'); INSERT INTO dict (value) VALUES ('aws')");
      // Global blocks, as before: tenant 1 got seqs 1 and 2001, tenant 2 seq 1001.
      for (const tenant of [1, 2, 1]) {
        await pool.query("INSERT INTO events (seq, ts, received_at, tenant_id, provider_id, action) VALUES (nextval('event_seq'), $1, $1, $2, 1, 1)", [NOW, tenant]);
      }
    } finally {
      await pool.end();
    }
    const store = await openPostgresStore({ url });
    try {
      const ids = async (tenantId: number) => (await store.listEvents(tenantId, { limit: 10 })).events.map((e) => e.eventId);
      assert.deepEqual(await ids(1), ['bm-00000000001jl', 'bm-0000000000001']);
      const one = async (tenantId: number) => (await store.commit({ events: [{ ...event(undefined), tenantId }], quarantine: [] }))[0]!.eventId;
      const [a, b] = [await one(1), await one(2)];
      // Above every seq handed out before, in both tenants.
      assert.ok(a > 'bm-00000000001jl' && b > 'bm-00000000001jl', `${a} ${b}`);
      assert.deepEqual(await ids(1), [a, 'bm-00000000001jl', 'bm-0000000000001']);
    } finally {
      await store.close();
    }
  });
});
