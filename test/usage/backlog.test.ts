/**
 * A read folds what was committed before it, but only for so long: with a backlog larger than the
 * read's fold budget (a bulk load, a long outage of the job owner) it answers 503
 * BM_ERR_QUERY_TIMEOUT with Retry-After instead of holding its connection past the HTTP server's
 * idle timeout (the object inventory's catch-up the same); once the background job has worked the
 * backlog off, the same read is exact. Real
 * SQLite file and real PostgreSQL, the budget set to nothing so that a single fold chunk is all a
 * read may do.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { BmError } from '../../src/errors.js';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { FOLD_CHUNK_EVENTS } from '../../src/store/postgres/usage-fold.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { Store } from '../../src/store/types.js';
import { parseUsageParams } from '../../src/usage/params.js';
import { UsageService } from '../../src/usage/service.js';
import { usageJson } from '../../src/usage/format.js';
import { ObjectsService } from '../../src/inventory/objects.js';
import { getObject, newTenant } from '../store/contract.js';
import { dropScratchDatabases, scratchDatabase, scratchDir } from '../support/scratch.js';

const T0 = Date.UTC(2026, 2, 1) / 1000;

after(dropScratchDatabases);

/** The refusal of a read behind a backlog: BM_ERR_QUERY_TIMEOUT with a retryAfter (a 503 with Retry-After: 10). */
async function assertRefused(read: Promise<unknown>, message: RegExp): Promise<void> {
  const refused = await read.then(
    () => assert.fail('answered with events committed before it not yet applied'),
    (err: unknown) => err,
  );
  assert.ok(refused instanceof BmError, String(refused));
  assert.equal(refused.code, 'BM_ERR_QUERY_TIMEOUT');
  assert.equal(refused.extra.retryAfter, 10);
  assert.match(refused.message, message);
}

/** `scratch`: a new location for a store; `open`: a store there (again, after it was closed). */
/** `units`: of 1,000 events, a backlog of more than one of the store's fold chunks (SQLite 10,000 events, PostgreSQL FOLD_CHUNK_EVENTS). */
const BACKENDS: { name: string; skip: string | false; units: number; scratch(): Promise<string>; open(at: string): Promise<Store> }[] = [
  {
    name: 'sqlite',
    skip: false,
    units: 60,
    scratch: async () => join(scratchDir('bm-backlog-').dir, 'bucketmeter.db'),
    open: (path) => openSqliteStore({ path, foldBeforeReadMs: 0 }),
  },
  {
    name: 'postgres',
    skip: process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set: PostgreSQL run of this suite SKIPPED',
    units: (3 * FOLD_CHUNK_EVENTS) / 2000,
    scratch: async () => (await scratchDatabase()).url,
    open: (url) => openPostgresStore({ url, poolMax: 4, foldBeforeReadMs: 0 }),
  },
];

for (const backend of BACKENDS) {
  describe(`usage read behind a fold backlog (${backend.name})`, { skip: backend.skip }, () => {
    it('refuses with BM_ERR_QUERY_TIMEOUT and a retryAfter (a 503 with Retry-After) while the backlog lasts, then answers the exact count', async () => {
      const at = await backend.scratch();
      let store = await backend.open(at);
      try {
        const { tenantId } = await newTenant(store);
        for (let u = 0; u < backend.units; u++) {
          const events: NormalizedEvent[] = Array.from({ length: 1000 }, (_, i) => getObject(T0 + ((u * 1000 + i) % 3600), { objectKey: `k${u}-${i}` }));
          await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: T0 + 3600, event })), quarantine: [] });
        }
        // Opened again: SQLite's writer would otherwise fold these from the few sums it kept, in one go
        // (usage-sums.ts); a backlog from before a restart is folded from the events, chunk by chunk.
        await store.close();
        store = await backend.open(at);
        const usage = new UsageService(store.usage, store.inventory);
        const request = parseUsageParams({ from: '2026-03-01T00:00:00Z', to: '2026-03-02T00:00:00Z' });
        await assertRefused(usage.query(tenantId, request), /still being folded/);
        assert.ok((await store.usage.lag()).pendingEvents > 0, 'the refused read left a backlog');

        await store.usage.catchUp();
        const answered = JSON.parse(usageJson(request, await usage.query(tenantId, request)).toString()) as { rows: { requests: number }[] };
        assert.deepEqual(answered.rows.map((r) => r.requests), [backend.units * 1000]);
      } finally {
        await store.close();
      }
    });

    it('a read of the object inventory behind a catch-up backlog is refused the same way, then exact', async () => {
      const store = await backend.open(await backend.scratch());
      try {
        const { tenantId } = await newTenant(store);
        for (let u = 0; u < 20; u++) {
          const events = Array.from({ length: 1000 }, (_, i) => ({ action: 'PutObject', timestamp: T0 + i, provider: 'aws', bucket: 'media', objectKey: `k${u}-${i}`, bytes: 10 }) as NormalizedEvent);
          await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: T0 + 3600, event })), quarantine: [] });
        }
        const objects = new ObjectsService(store.inventory);
        await assertRefused(objects.list(tenantId, { bucket: 'media', limit: '1' }), /still being applied to the object inventory/);

        await store.inventory.catchUp();
        const page = await objects.list(tenantId, { bucket: 'media', limit: '1' });
        assert.deepEqual(page.objects.map((o) => [o.key, o.size]), [['k0-0', 10]]);
      } finally {
        await store.close();
      }
    });

    it('answers a backlog that the read folds in one go, however short its budget', async () => {
      const store = await backend.open(await backend.scratch());
      try {
        const { tenantId } = await newTenant(store);
        // Under one fold chunk on either store: the read's first fold takes all of it.
        const events: NormalizedEvent[] = Array.from({ length: 5000 }, (_, i) => getObject(T0 + (i % 3600), { objectKey: `k${i}` }));
        for (let i = 0; i < events.length; i += 1000) {
          await store.commit({ events: events.slice(i, i + 1000).map((event) => ({ tenantId, receivedAt: T0 + 3600, event })), quarantine: [] });
        }
        const request = parseUsageParams({ from: '2026-03-01T00:00:00Z', to: '2026-03-02T00:00:00Z' });
        const answered = JSON.parse(usageJson(request, await new UsageService(store.usage, store.inventory).query(tenantId, request)).toString()) as { rows: { requests: number }[] };
        assert.deepEqual(answered.rows.map((r) => r.requests), [5000]);
      } finally {
        await store.close();
      }
    });
  });
}
