/**
 * The bound on rows of stored bytes per usage answer (BM_ERR_ANSWER_TOO_LARGE, 422): with
 * storage=true every group has a row in every window, so groups × windows past the bound is refused
 * before those rows are built, naming the count and the bound; at the bound exactly the answer is
 * the unbounded one. A real SQLite store (the HTTP test in test/inventory/http.test.ts meets the real bound).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BmError } from '../../src/errors.js';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import { UsageService, pageRows } from '../../src/usage/service.js';
import type { UsageRequest } from '../../src/usage/params.js';
import { newTenant } from '../store/contract.js';
import { scratchDir } from '../support/scratch.js';

const FROM = Date.UTC(2026, 2, 1) / 1000;
const HOUR = 3600;

describe('usage: the bound on rows of stored bytes per answer', () => {
  const temp = scratchDir('bm-usage-bound-');
  let store: SqliteStore;
  let tenantId: number;
  // 3 clients' objects over 10 hourly windows: 30 rows of levels, though only the first hour changed.
  const request: UsageRequest = { from: FROM, to: FROM + 10 * HOUR, granularity: 'hour', timeZone: 'UTC', groupBy: ['clientId'], filters: {}, storage: true, format: 'json', limit: 100_000 };
  const rows = async (service: UsageService, q: UsageRequest = request) => pageRows(await service.query(tenantId, q)).map((r) => JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));

  before(async () => {
    store = await openSqliteStore({ path: join(temp.dir, 'usage.db') });
    ({ tenantId } = await newTenant(store));
    const events = ['k1', 'k2', 'k3'].map((clientId, i): NormalizedEvent => ({ action: 'PutObject', timestamp: FROM + 60 * i, provider: 'aws', bucket: 'b', objectKey: `o${i}`, bytes: 1000, clientId }));
    await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: FROM + HOUR, event })), quarantine: [] });
  });
  after(async () => {
    await store.close();
    await temp.remove();
  });

  it('refuses groups × windows past the bound, naming both; answers at the bound exactly as unbounded', async () => {
    const unbounded = await rows(new UsageService(store.usage, store.inventory, { rows: 0 }));
    assert.equal(unbounded.length, 30);
    await assert.rejects(new UsageService(store.usage, store.inventory, { rows: 0 }, { storageRows: 29 }).query(tenantId, request), (err: unknown) => {
      assert.ok(err instanceof BmError);
      assert.equal(err.code, 'BM_ERR_ANSWER_TOO_LARGE');
      assert.equal(err.status, 422);
      assert.match(err.message, /3 groups in 10 windows are 30 rows, more than the 29 a request may hold/);
      return true;
    });
    assert.deepEqual(await rows(new UsageService(store.usage, store.inventory, { rows: 0 }, { storageRows: 30 })), unbounded);
    // Without storage, rows are what the events made (one per client), and the bound does not apply.
    assert.equal((await rows(new UsageService(store.usage, store.inventory, { rows: 0 }, { storageRows: 1 }), { ...request, storage: false })).length, 3);
  });
});
