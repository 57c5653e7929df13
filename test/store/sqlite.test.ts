/** The store contract on a real SQLite file, plus what only SQLite has: the file, its pragmas, its schema steps. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { openConnection } from '../../src/store/sqlite/connection.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { migrate } from '../../src/store/sqlite/migrate.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { prepareFiles } from '../../src/store/sqlite/store.js';
import { ObjectKeyIds, objectKeyHash, prepareObjectKeys } from '../../src/store/sqlite/object-keys.js';
import { ReadBudget } from '../../src/store/sqlite/read-budget.js';
import { EventReader } from '../../src/store/sqlite/read-events.js';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import type { CommitUnit } from '../../src/store/types.js';
import { scratchDir } from '../support/scratch.js';
import { T0, fullEvent, getObject, listAll, newTenant, storeContract } from './contract.js';

const tempDir = async () => scratchDir('bm-sqlite-');

storeContract(
  'sqlite',
  async () => {
    const temp = await tempDir();
    const store = await openSqliteStore({ path: join(temp.dir, 'bucketmeter.db') });
    return {
      store,
      cleanup: async () => {
        await store.close();
        await temp.remove();
      },
    };
  },
  {
    skip: {
      // Each open() here is a database file of its own; and SQLite is served by one process, which owns the jobs.
      'a second store on the same database does not get the jobs while the first holds them, and does once it closes': 'one process per SQLite database',
    },
  },
);

describe('sqlite store', () => {
  it('reopens a file with everything in it, without re-applying migrations', async () => {
    const temp = await tempDir();
    const path = join(temp.dir, 'reopen.db');
    try {
      const first = await openSqliteStore({ path });
      const key = await newTenant(first);
      const unit: CommitUnit = {
        events: [
          { tenantId: key.tenantId, receivedAt: T0 + 1, event: fullEvent('PutObject', T0, 'client-1') },
          { tenantId: key.tenantId, receivedAt: T0 + 1, event: getObject(T0, { customerId: 'cust-a' }) },
        ],
        quarantine: [{ tenantId: key.tenantId, receivedAt: T0, code: 'BM_ERR_EVENT_INVALID', errors: [], source: 'POST /s3', body: Buffer.from('{}'), truncated: false }],
      };
      const outcomes = await first.commit(unit);
      const events = await listAll(first, key.tenantId);
      const keys = await first.keys.list();
      const quarantine = await first.quarantine.list({ limit: 10, includeReplayed: true });
      await first.close();

      const raw = new Database(path, { readonly: true });
      const migrationsBefore = raw.prepare('SELECT * FROM schema_migrations ORDER BY version').all();
      raw.close();
      assert.equal(migrationsBefore.length, MIGRATIONS.length);

      const second = await openSqliteStore({ path });
      try {
        assert.deepEqual(await listAll(second, key.tenantId), events);
        assert.deepEqual(await second.keys.list(), keys);
        assert.deepEqual(await second.quarantine.list({ limit: 10, includeReplayed: true }), quarantine);
        // Exactly-once outlives the process; server ids keep increasing.
        const again = await second.commit({ events: [unit.events[0]!, { tenantId: key.tenantId, receivedAt: T0 + 2, event: getObject(T0) }], quarantine: [] });
        assert.deepEqual(again[0], { eventId: 'client-1', duplicate: true });
        assert.ok(again[1]!.eventId > outcomes[1]!.eventId);
        const check = new Database(path, { readonly: true });
        assert.deepEqual(check.prepare('SELECT * FROM schema_migrations ORDER BY version').all(), migrationsBefore);
        check.close();
      } finally {
        await second.close();
      }
    } finally {
      await temp.remove();
    }
  });

  it('runs both connections in WAL mode with synchronous=FULL and a busy timeout', async () => {
    const temp = await tempDir();
    try {
      const store = await openSqliteStore({ path: join(temp.dir, 'pragmas.db'), busyTimeoutMs: 1234 });
      const expected = { journalMode: 'wal', synchronous: 2, busyTimeoutMs: 1234 };
      assert.deepEqual(await store.settings(), { reader: expected, writer: expected });
      await store.close();
    } finally {
      await temp.remove();
    }
  });

  it('applies only the schema steps a database lacks, and refuses a newer database', async () => {
    const temp = await tempDir();
    try {
      const path = join(temp.dir, 'steps.db');
      const db = openConnection(path, 1000);
      const now = () => 42;
      // Re-running step 1 would fail (CREATE TABLE without IF NOT EXISTS).
      const step1 = { version: 1, name: 'one', sql: 'CREATE TABLE one (x INTEGER)' };
      // Beyond this bucketmeter's last step, so that the database ends up newer than it knows.
      const newer = MIGRATIONS.length + 1;
      const step2 = { version: newer, name: 'two', sql: 'CREATE TABLE two (x INTEGER)' };
      assert.deepEqual(migrate(db, [step1], now), { from: 0, to: 1 });
      assert.deepEqual(migrate(db, [step1], now), { from: 1, to: 1 });
      assert.deepEqual(migrate(db, [step1, step2], now), { from: 1, to: newer });
      assert.deepEqual(db.prepare('SELECT version, name, applied_at FROM schema_migrations').raw().all(), [[1, 'one', 42], [newer, 'two', 42]]);
      assert.throws(() => migrate(db, [step1], now), /newer than this bucketmeter knows/);
      db.close();
      await assert.rejects(openSqliteStore({ path }), /newer than this bucketmeter knows/);
    } finally {
      await temp.remove();
    }
  });

  it('numbers its schema steps 1, 2, 3...', () => {
    assert.deepEqual(MIGRATIONS.map((m) => m.version), MIGRATIONS.map((_, i) => i + 1));
  });

  it('never reuses a server event id, even after the newest events are deleted', async () => {
    const temp = await tempDir();
    const path = join(temp.dir, 'seq.db');
    try {
      const store = await openSqliteStore({ path });
      const { tenantId } = await newTenant(store);
      const first = await store.commit({ events: [1, 2, 3].map(() => ({ tenantId, receivedAt: T0, event: getObject(T0) })), quarantine: [] });
      const other = new Database(path);
      other.exec('DELETE FROM events');
      other.close();
      const second = await store.commit({ events: [{ tenantId, receivedAt: T0, event: getObject(T0) }], quarantine: [] });
      assert.ok(second[0]!.eventId > first[2]!.eventId, `${second[0]!.eventId} after ${first[2]!.eventId}`);
      await store.close();
    } finally {
      await temp.remove();
    }
  });

  it('two stores on one file (two writers) keep ids unique and events exactly once', async () => {
    const temp = await tempDir();
    const path = join(temp.dir, 'two.db');
    try {
      const a = await openSqliteStore({ path });
      const b = await openSqliteStore({ path });
      const { tenantId } = await newTenant(a);
      const unitFor = (n: number): CommitUnit => ({
        events: [
          ...Array.from({ length: 20 }, (_, i) => ({ tenantId, receivedAt: T0, event: getObject(T0, { customerId: `c-${n}-${i % 3}` }) })),
          { tenantId, receivedAt: T0, event: getObject(T0, { eventId: 'contested' }) },
        ],
        quarantine: [],
      });
      const results = await Promise.all(Array.from({ length: 10 }, (_, n) => (n % 2 === 0 ? a : b).commit(unitFor(n))));
      const serverIds = results.flatMap((r) => r.slice(0, 20).map((o) => o.eventId));
      assert.equal(new Set(serverIds).size, 200);
      assert.equal(results.filter((r) => !r[20]!.duplicate).length, 1);
      const listed = await listAll(b, tenantId);
      assert.equal(listed.length, 201);
      // Dictionary ids written by one store are read correctly by the other.
      assert.equal(listed.filter((e) => e.customerId === 'c-3-1').length, 7);
      await Promise.all([a.close(), b.close()]);
    } finally {
      await temp.remove();
    }
  });

  it('createIfNone creates exactly one key when processes race on a new database', async () => {
    const temp = await tempDir();
    const path = join(temp.dir, 'race.db');
    try {
      // The schema exists first, so the race is about the key only.
      await (await openSqliteStore({ path })).close();
      const storeModule = new URL('../../src/store/sqlite/index.js', import.meta.url).href;
      const startAt = Date.now() + 1500;
      const script = join(temp.dir, 'race.mjs');
      await writeFile(script, `
        const { openSqliteStore } = await import(${JSON.stringify(storeModule)});
        const store = await openSqliteStore({ path: process.argv[2] });
        while (Date.now() < ${startAt});
        const created = await store.keys.createIfNone({ id: process.argv[3], tenantName: 'default', hash: Buffer.from(process.argv[3]), createdAt: 1 });
        await store.close();
        process.stdout.write(created ? 'created' : 'none');`);
      const run = promisify(execFile);
      const outputs = await Promise.all(
        Array.from({ length: 4 }, (_, i) => run(process.execPath, [script, path, `key-${i}-${randomBytes(4).toString('hex')}`])),
      );
      assert.deepEqual(outputs.map((o) => o.stdout).sort(), ['created', 'none', 'none', 'none']);
      const store = await openSqliteStore({ path });
      assert.equal((await store.keys.list()).length, 1);
      assert.equal(await store.keys.createIfNone({ id: 'late', tenantName: 'default', hash: Buffer.from('late'), createdAt: 2 }), undefined);
      await store.close();
    } finally {
      await temp.remove();
    }
  });

  it('a walk in small steps finds the same pages as one step', async () => {
    const temp = await tempDir();
    const path = join(temp.dir, 'walk.db');
    try {
      const store = await openSqliteStore({ path });
      const a = await newTenant(store);
      const b = await newTenant(store);
      // Runs of tenant a between long runs of b, so that many windows hold nothing of a.
      const pattern = [...'aabbbbbbbbbbabbbbbbbbbbbbbaaabbbbbbbbbbbbbbbbbba'];
      await store.commit({
        events: pattern.map((t, i) => ({ tenantId: (t === 'a' ? a : b).tenantId, receivedAt: T0, event: { ...getObject(T0 + i), action: i % 4 === 0 ? 'PutObject' : 'GetObject' } as NormalizedEvent })),
        quarantine: [],
      });
      const db = openConnection(path, 1000);
      const small = new EventReader(db, 3);
      const walkAll = (query: { action?: 'PutObject' }, limit: number): string[] => {
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = small.list(a.tenantId, cursor === undefined ? { ...query, limit } : { ...query, limit, cursor }, new ReadBudget(Infinity, 0));
          seen.push(...page.events.map((e) => e.eventId));
          cursor = page.nextCursor ?? undefined;
        } while (cursor !== undefined);
        return seen;
      };
      for (const limit of [1, 2, 5, 100]) {
        assert.deepEqual(walkAll({}, limit), (await listAll(store, a.tenantId)).map((e) => e.eventId));
        assert.deepEqual(walkAll({ action: 'PutObject' }, limit), (await listAll(store, a.tenantId, { action: 'PutObject' })).map((e) => e.eventId));
      }
      assert.equal((await listAll(store, a.tenantId)).length, 7);
      db.close();
      await store.close();
    } finally {
      await temp.remove();
    }
  });

  it('object keys whose hashes collide get the next free ids, found again by probing', async () => {
    const temp = await tempDir();
    try {
      const db = openConnection(join(temp.dir, 'collide.db'), 1000);
      prepareFiles(db, db.name, () => T0);
      const s = prepareObjectKeys(db);
      const top = 0x7fffffff;
      const writer = new ObjectKeyIds(() => top);
      const added: string[] = [];
      // The probe wraps around from the largest id to 0.
      assert.deepEqual(['a', 'b', 'c', 'a', 'b'].map((key) => writer.id(s, key, added)), [top, 0, 1, top, 0]);
      assert.deepEqual(added, ['a', 'b', 'c']);
      // A writer with nothing cached (another process, or after a restart) finds the same ids.
      const fresh = new ObjectKeyIds(() => top);
      const none: string[] = [];
      assert.deepEqual(['c', 'b', 'a', 'd'].map((key) => fresh.id(s, key, none)), [1, 0, top, 2]);
      assert.deepEqual(none, ['d']);
      assert.deepEqual(db.prepare('SELECT id, value FROM object_keys ORDER BY id').raw().all(), [[0, 'b'], [1, 'c'], [2, 'd'], [top, 'a']]);
      db.close();
    } finally {
      await temp.remove();
    }
  });

  it('an object key whose hash is taken by another key is stored and read back as itself', async () => {
    const temp = await tempDir();
    const path = join(temp.dir, 'planted.db');
    try {
      const store = await openSqliteStore({ path });
      const { tenantId } = await newTenant(store);
      // Another key already holds the id that 'photos/cat.jpg' hashes to: a real collision, planted.
      const other = new Database(path);
      const id = objectKeyHash(other)('photos/cat.jpg');
      other.prepare('INSERT INTO object_keys (id, value) VALUES (?, ?)').run(id, 'photos/dog.jpg');
      other.close();
      const keys = ['photos/cat.jpg', 'photos/dog.jpg', 'photos/cat.jpg'];
      await store.commit({ events: keys.map((objectKey, i) => ({ tenantId, receivedAt: T0, event: getObject(T0 + i, { objectKey }) })), quarantine: [] });
      assert.deepEqual((await listAll(store, tenantId)).map((e) => e.objectKey).reverse(), keys);
      const check = new Database(path, { readonly: true });
      const ids = check.prepare('SELECT value, id FROM object_keys ORDER BY value').raw().all() as [string, number][];
      check.close();
      assert.equal(ids.length, 3, 'the colliding key is stored once, under another id');
      assert.equal(ids.find(([value]) => value === 'photos/cat.jpg')![1], id + 1);
      await store.close();
    } finally {
      await temp.remove();
    }
  });

  it('an event whose object key row is missing fails the read instead of losing the key', async () => {
    const temp = await tempDir();
    const path = join(temp.dir, 'missing.db');
    try {
      const store = await openSqliteStore({ path });
      const { tenantId } = await newTenant(store);
      await store.commit({ events: [{ tenantId, receivedAt: T0, event: getObject(T0, { objectKey: 'gone' }) }], quarantine: [] });
      const other = new Database(path);
      other.exec('DELETE FROM object_keys');
      other.close();
      await assert.rejects(store.listEvents(tenantId, { limit: 10 }), /object key id \d+ is missing/);
      await store.close();
    } finally {
      await temp.remove();
    }
  });

  it('createIfNone creates the first key of an empty database', async () => {
    const temp = await tempDir();
    try {
      const store = await openSqliteStore({ path: join(temp.dir, 'first.db') });
      const hash = randomBytes(32);
      const created = await store.keys.createIfNone({ id: 'first', tenantName: 'default', hash, createdAt: T0 });
      assert.deepEqual(created, { id: 'first', tenantId: created!.tenantId, tenantName: 'default', scope: 'all', createdAt: T0, revokedAt: null });
      assert.deepEqual(await store.keys.findActiveByHash(hash), created);
      await store.close();
    } finally {
      await temp.remove();
    }
  });
});
