/**
 * Pricings nobody waits for (their requests ran out of time or their clients left) never hold every
 * turn from a request that waits: with both taken by them, one stops at its next step. Else two
 * requests whose clients left at once would hold every other tenant's costs for their whole pricing.
 * And a request that joins one as it stops for want of waiters is answered, not stopped with it.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { CostService } from '../../src/costs/service.js';
import { loadPricing } from '../../src/pricing/setup.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import { ReadAbortedError } from '../../src/store/types.js';
import type { UsageStore } from '../../src/store/types.js';
import { parseUsageParams } from '../../src/usage/params.js';
import { getObject, newTenant } from '../store/contract.js';
import { scratchDir } from '../support/scratch.js';

const HOUR = 3600;
const DAY = 86400;
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

/**
 * A request that joins a pricing of its month (the same version, priced for another request) while
 * the pricing reads the month's version to decide whether to go on: stopped, the pricing's
 * ReadAbortedError was the joining request's, whose client had not left (BM_ERR_CLIENT_CLOSED, 499,
 * "no client receives this reply", sent to a client that waits).
 */
it('a request joining a pricing while it reads whether anyone still waits is answered, not aborted with it', async () => {
  const { tenantId } = await newTenant(store);
  const event = (day: number, customerId: string) => ({ tenantId, receivedAt: startOf('2026-07'), event: getObject(startOf('2026-03') + day * DAY + 5, { provider: 'aws', bucket: 'media', customerId, bytes: 1000 }) });
  await store.commit({ events: [event(0, 'c1'), event(1, 'c2')], quarantine: [] });
  const march = parseUsageParams({ from: '2026-03-01T00:00:00Z', to: '2026-04-01T00:00:00Z', groupBy: 'customerId' }, undefined, ['json']);

  let firstLeft = false;
  // The version read that follows the first request leaving (the pricing's, asking whether to go on) waits for `open`.
  let gateNext = false;
  let open: () => void = () => {};
  const gate = new Promise<void>((done) => {
    open = done;
  });
  let gated: () => void = () => {};
  const reached = new Promise<void>((done) => {
    gated = done;
  });
  let versionsRead = 0;
  const usage: Pick<UsageStore, 'query' | 'version'> = {
    query: async (tenant, q, signal) => {
      // The first request's client leaves once its pricing has read March's first day.
      if (q.terms[0]!.spans[0]!.from * 3600 === startOf('2026-03') + DAY) {
        firstLeft = true;
        gateNext = true;
      }
      return store.usage.query(tenant, q, signal);
    },
    version: async (...args) => {
      if (gateNext) {
        gateNext = false;
        gated();
        await gate;
      }
      const version = await store.usage.version(...args);
      versionsRead++;
      return version;
    },
  };
  const costs = new CostService({ usage, storage: store.storageFeed, pricing: loadPricing({ prices: undefined, bucketPlans: undefined }) });
  const first = costs.query(tenantId, march, () => firstLeft);
  const firstSettled = first.then(
    () => 'answered',
    (err: unknown) => err,
  );
  await reached;
  // The second request reads the same version and joins the pricing while it reads on.
  const before = versionsRead;
  const second = costs.query(tenantId, march);
  while (versionsRead === before) await new Promise((next) => setImmediate(next));
  for (let i = 0; i < 5; i++) await new Promise((next) => setImmediate(next));
  // An event before March's end lands meanwhile: the version the pricing reads has changed.
  await store.commit({ events: [event(2, 'c3')], quarantine: [] });
  open();

  const page = await second;
  assert.deepEqual(
    page.rows.map((r) => r.dimensions.customerId),
    ['c1', 'c2', 'c3'],
    'the joining request answered (from the store as it is now)',
  );
  // The scenario itself: the pricing did stop, nobody but the joining request waiting for it.
  assert.ok((await firstSettled) instanceof ReadAbortedError, `the pricing stopped: ${String(await firstSettled)}`);
});
