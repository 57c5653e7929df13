/**
 * Pricings nobody waits for (their requests ran out of time or their clients left) never hold every
 * turn from a request that waits: with both taken by them, one stops at its next step. Else two
 * requests whose clients left at once would hold every other tenant's costs for their whole pricing.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { CostService } from '../../src/costs/service.js';
import { loadPricing } from '../../src/pricing/setup.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import type { UsageStore } from '../../src/store/types.js';
import { parseUsageParams } from '../../src/usage/params.js';
import { getObject, newTenant } from '../store/contract.js';
import { scratchDir } from '../support/scratch.js';

const HOUR = 3600;
const startOf = (month: string) => Date.parse(`${month}-01T00:00:00Z`) / 1000;
const temp = scratchDir('bm-cost-orphans-');
let store: SqliteStore;
let a: number;
let b: number;
before(async () => {
  store = await openSqliteStore({ path: join(temp.dir, 'cost.db') });
  ({ tenantId: a } = await newTenant(store));
  ({ tenantId: b } = await newTenant(store));
  const events = [a, b].flatMap((tenantId) =>
    [0, 1, 2].map((h) => ({ tenantId, receivedAt: startOf('2026-06'), event: getObject(startOf('2026-03') + h * HOUR + 5, { provider: 'aws', bucket: 'media', customerId: 'c', bytes: 1000 }) })),
  );
  await store.commit({ events, quarantine: [] });
});
after(async () => {
  await store.close();
  await temp.remove();
});

it('pricings nobody waits for give a turn up to a request that waits for one', async () => {
  const reads: string[] = [];
  // Tenant A's reads wait until tenant B's request waits for its turn.
  let queued: () => void = () => {};
  const bQueued = new Promise<void>((done) => {
    queued = done;
  });
  const usage: Pick<UsageStore, 'query' | 'version'> = {
    query: async (tenant, q) => {
      if (tenant === a) await bQueued;
      reads.push(tenant === a ? 'A' : 'B');
      return store.usage.query(tenant, q);
    },
    version: async (tenant, toDay) => {
      const version = await store.usage.version(tenant, toDay);
      if (tenant === b) setImmediate(() => setImmediate(queued));
      return version;
    },
  };
  const service = new CostService({ usage, storage: store.storageFeed, pricing: loadPricing({ prices: undefined, bucketPlans: undefined }) });
  const march = (provider: string[]) => parseUsageParams({ from: '2026-03-01T00:00:00Z', to: '2026-04-01T00:00:00Z', provider }, undefined, ['json']);
  // Two requests of tenant A (two provider filters: two pricings), each client leaving once its pricing began.
  const leaving = () => {
    let asked = 0;
    return () => asked++ > 0;
  };
  const orphans = [service.query(a, march(['aws', 'x1']), leaving()), service.query(a, march(['aws', 'x2']), leaving())].map((p) => p.catch(() => 'left'));
  await new Promise((next) => setImmediate(next));
  const page = await service.query(b, march(['aws']));
  assert.equal(page.rows.length, 1);
  await Promise.all(orphans);
  assert.ok(reads.indexOf('B') >= 0 && reads.indexOf('B') < reads.lastIndexOf('A'), `B priced before both pricings nobody waits for ended: ${reads.join('')}`);
});
