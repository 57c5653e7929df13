/**
 * The key format of the hosted service, which its Java collector checks at start (and, on a mismatch,
 * logs the whole key and posts it away): new keys match it; keys made before it keep working.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { hashKey } from '../../src/auth/keys.js';
import type { Store } from '../../src/store/types.js';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { minimalWireEvent } from '../support/events.js';
import { createKey, request, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';

/** The Java collector's check (ConnectionUtils.APIKey.REGEX_FULL). */
const COLLECTOR_KEY_REGEX = /^([A-Za-z0-9]{8}\.)?[A-Za-z0-9+/]{48}$/;

/** A key in the format bucketmeter gave before this one. */
const LEGACY_KEY = 'bmk_' + 'q3Zx-_9aB'.repeat(5).slice(0, 43);

/** Opens the store named by the test's flags in this process, as the CLI would. */
async function openStoreOf(args: string[]): Promise<Store> {
  const logger = pino({ level: 'silent' });
  if (args[0] === '--database-url') {
    const { openPostgresStore } = await import('../../src/store/postgres/index.js');
    return openPostgresStore({ url: args[1]!, poolMax: 2, logger });
  }
  const { openSqliteStore } = await import('../../src/store/sqlite/index.js');
  return openSqliteStore({ path: `${args[1]}/bucketmeter.db`, logger, maxGroupEvents: 100 });
}

for (const backend of BACKENDS) {
  describe(`key format (${backend.name})`, { skip: backend.skip }, () => {
    let storeArgs: string[];
    let server: ServerProcess;

    before(async () => {
      storeArgs = await backend.fresh();
      server = await startServer({ args: storeArgs });
    });
    after(() => server.stop());

    it('the key printed on first start and every created key match the collector\'s regex', async () => {
      assert.match(server.bootstrapKey ?? '', COLLECTOR_KEY_REGEX);
      const keys = [server.bootstrapKey!];
      // A few, each a process of its own: the generator's randomness is tested on 1000 keys in-process
      // (test/auth/keys.test.ts); this is the path from the CLI and the first start to a working key.
      for (let i = 0; i < 5; i++) keys.push(await createKey(`tenant-${i}`, storeArgs));
      for (const key of keys) {
        assert.match(key, COLLECTOR_KEY_REGEX);
        // The prefixed form: an 8-character public id, then 48 base64 characters (288 bits).
        assert.match(key, /^[A-Za-z0-9]{8}\.[A-Za-z0-9+/]{48}$/);
        assert.equal((await request(`${server.url}/ping`, { key })).status, 200);
      }
      assert.equal(new Set(keys).size, keys.length);
    });

    it('a key made before the format change keeps working', async () => {
      const store = await openStoreOf(storeArgs);
      try {
        await store.keys.create({ id: 'legacy00001a', tenantName: 'legacy', hash: hashKey(LEGACY_KEY), createdAt: Math.floor(Date.now() / 1000) });
      } finally {
        await store.close();
      }
      assert.equal((await request(`${server.url}/ping`, { key: LEGACY_KEY })).status, 200);
      const reply = await request(`${server.url}/s3`, { key: LEGACY_KEY, body: minimalWireEvent('ListBuckets', { eventId: 'legacy-1' }) });
      assert.deepEqual([reply.status, reply.json], [200, { eventId: 'legacy-1', duplicate: false }]);
      assert.equal((await request(`${server.url}/ping`, { key: LEGACY_KEY.slice(0, -1) + 'A' })).status, 401);
    });
  });
}

after(() => dropFreshStores());
