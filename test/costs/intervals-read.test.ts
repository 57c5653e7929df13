/**
 * The intervals behind minimum object sizes and durations are read only for the providers whose
 * plans have them (most of a month's ended versions are other providers', which would add nothing),
 * and the month's price is the same as from every provider's intervals. A real SQLite store, its
 * feed wrapped to record the filters asked for.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CostService } from '../../src/costs/service.js';
import { loadPricing } from '../../src/pricing/setup.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import type { StorageFeed, StorageIntervalFilter } from '../../src/store/types.js';
import { newTenant } from '../store/contract.js';
import { scratchDir } from '../support/scratch.js';

const MARCH = Date.UTC(2026, 2, 1) / 1000;
const HOUR = 3600;

describe('the intervals read for minimum sizes and durations', () => {
  const temp = scratchDir('bm-cost-intervals-');
  let store: SqliteStore;
  let tenantId: number;
  const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });

  before(async () => {
    store = await openSqliteStore({ path: join(temp.dir, 'cost.db') });
    ({ tenantId } = await newTenant(store));
    // A small object put and deleted within hours, on Wasabi (90 days and 4 KiB minimums) and on AWS (none).
    const events = ['wasabi', 'aws'].flatMap((provider) => [
      { action: 'PutObject', timestamp: MARCH + 10 * HOUR + 5, provider, bucket: `${provider}-b`, objectKey: 'k', bytes: 100, customerId: 'c1' },
      { action: 'DeleteObject', timestamp: MARCH + 13 * HOUR + 7, provider, bucket: `${provider}-b`, objectKey: 'k', customerId: 'c1' },
    ]) as unknown as NormalizedEvent[];
    await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: MARCH + 20 * HOUR, event })), quarantine: [] });
  });
  after(async () => {
    await store.close();
    await temp.remove();
  });

  /** A service over the store's feed, each intervals filter recorded; `every`: the providers filter dropped. */
  function service(every: boolean) {
    const filters: StorageIntervalFilter[] = [];
    const feed = store.storageFeed;
    const storage: StorageFeed = {
      storageDeltas: (...args) => feed.storageDeltas(...args),
      storageIntervals: (tenant, from, to, filter) => {
        filters.push(filter);
        const { providers: _providers, ...rest } = filter;
        return feed.storageIntervals(tenant, from, to, every ? rest : filter);
      },
    };
    return { filters, costs: new CostService({ usage: store.usage, storage, pricing, keptRows: 0, now: () => MARCH + 40 * 86400 }) };
  }

  it('asks for the providers with the minimum only, and prices the month as from every provider', async () => {
    const only = service(false);
    const rows = (await only.costs.priceMonth(tenantId, '2026-03')).flatMap((a) => a.rows);
    assert.deepEqual(
      only.filters.filter((f) => f.smallerThan !== undefined || f.endedYoungerThan !== undefined).map((f) => f.providers),
      [['wasabi'], ['wasabi']],
    );
    assert.ok(
      rows.some((r) => r.provider === 'wasabi' && r.charge === 'early-delete'),
      'the Wasabi object deleted early is billed the rest of its 90 days',
    );
    const every = service(true);
    assert.deepEqual(rows, (await every.costs.priceMonth(tenantId, '2026-03')).flatMap((a) => a.rows));
  });
});
