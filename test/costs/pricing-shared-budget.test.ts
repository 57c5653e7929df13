/**
 * A request that joins a pricing begun by another request is answered as if it had priced the month
 * itself: the bound on key-hours is per request (README "Cost"), so a month that fits a request's
 * whole budget is not refused because the request that began its pricing had spent part of its own.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CostService } from '../../src/costs/service.js';
import { BmError } from '../../src/errors.js';
import { loadPricing } from '../../src/pricing/setup.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import type { UsageStore } from '../../src/store/types.js';
import { parseUsageParams } from '../../src/usage/params.js';
import { getObject, newTenant } from '../store/contract.js';
import { scratchDir } from '../support/scratch.js';

const HOUR = 3600;
const startOf = (month: string) => Date.parse(`${month}-01T00:00:00Z`) / 1000;
const range = (from: string, to: string) => parseUsageParams({ from: `${from}-01T00:00:00Z`, to: `${to}-01T00:00:00Z`, groupBy: 'customerId' }, undefined, ['json']);

describe('a pricing shared by requests of the same month', () => {
  const temp = scratchDir('bm-cost-shared-budget-');
  let store: SqliteStore;
  let tenantId: number;
  const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });

  /** A service bounded at `maxKeyHours`, `afterRead` called after each usage read (with its month) and version read. */
  const service = (maxKeyHours: number, afterRead: (read: string) => Promise<void> | void = () => {}) => {
    const usage: Pick<UsageStore, 'query' | 'version'> = {
      query: async (tenant, q) => {
        const rows = await store.usage.query(tenant, q);
        await afterRead(`usage ${new Date(q.terms[0]!.spans[0]!.from * HOUR * 1000).toISOString().slice(0, 7)}`);
        return rows;
      },
      version: async (...args) => {
        const version = await store.usage.version(...args);
        await afterRead('version');
        return version;
      },
    };
    return new CostService({ usage, storage: store.storageFeed, pricing, maxKeyHours });
  };
  const tooLarge = (err: unknown) => err instanceof BmError && err.code === 'BM_ERR_COST_TOO_LARGE';

  before(async () => {
    store = await openSqliteStore({ path: join(temp.dir, 'cost.db') });
    ({ tenantId } = await newTenant(store));
    const events = ['2026-03', '2026-04'].flatMap((month) =>
      [0, 1, 2].flatMap((h) => ['c1', 'c2'].map((customerId) => getObject(startOf(month) + h * HOUR + 5, { provider: 'aws', bucket: 'media', customerId, bytes: 1000 }))),
    );
    await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: startOf('2026-06') + HOUR, event })), quarantine: [] });
  });
  after(async () => {
    await store.close();
    await temp.remove();
  });

  it('is not refused for a request whose own budget holds the month', async () => {
    // The least bound under which April alone is priced: March and April together pass it.
    let bound = 1;
    while (await service(bound).query(tenantId, range('2026-04', '2026-05')).then(() => false, (err: unknown) => (tooLarge(err) ? true : Promise.reject(err)))) bound++;
    await assert.rejects(service(bound).query(tenantId, range('2026-03', '2026-05')), tooLarge, 'March and April pass the bound together');

    // Both months asked for; once its pricing of April began, a request for April alone comes.
    let aprilAlone: Promise<unknown> | undefined;
    let joined: () => void = () => {};
    const costs = service(bound, async (read) => {
      if (read === 'usage 2026-04' && aprilAlone === undefined) {
        const versionRead = new Promise<void>((done) => {
          joined = done;
        });
        aprilAlone = costs.query(tenantId, range('2026-04', '2026-05'));
        aprilAlone.catch(() => {});
        await versionRead;
        // Its version read returned: it is past it, waiting for the pricing of April.
        for (let i = 0; i < 5; i++) await new Promise((next) => setImmediate(next));
      } else if (read === 'version') joined();
    });
    await assert.rejects(costs.query(tenantId, range('2026-03', '2026-05')), tooLarge);
    assert.ok(aprilAlone !== undefined);
    const page = await aprilAlone;
    assert.deepEqual((page as { rows: { dimensions: { customerId: string } }[] }).rows.map((r) => r.dimensions.customerId), ['c1', 'c2']);
  });
});
