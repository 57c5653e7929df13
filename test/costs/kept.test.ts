/**
 * Priced account-months kept for reuse (CostService): on both real stores, a month is reused while
 * its version (the tenant's events before the month's end) is unchanged, even when later months
 * get events; an event of the month, however late, has it priced again, equal to a fresh
 * service's answer, and so does a rebuild of its rollups or inventory by another process (the
 * CLI's `usage rebuild`); the bound on kept rows is honoured.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CostService } from '../../src/costs/service.js';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { loadPricing } from '../../src/pricing/setup.js';
import { UsageService } from '../../src/usage/service.js';
import { getObject, newTenant } from '../store/contract.js';
import { damageRollups, openSameData } from '../support/same-data.js';
import { openedBackends } from '../support/backends.js';
import type { OpenedStore } from '../support/backends.js';

const MARCH = Date.UTC(2026, 2, 1) / 1000;
const APRIL = Date.UTC(2026, 3, 1) / 1000;
const DAY = 86400;

const put = (timestamp: number, objectKey: string, bytes: number): NormalizedEvent =>
  ({ action: 'PutObject', timestamp, provider: 'aws', bucket: 'media', objectKey, bytes, customerId: 'c1' }) as NormalizedEvent;

const BACKENDS = openedBackends('cost-kept');

for (const backend of BACKENDS) {
  describe(`cost: priced months kept (${backend.name})`, { skip: backend.skip }, () => {
    let opened: OpenedStore;
    let tenantId: number;
    const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });
    const service = (keptRows?: number) => new CostService({ usage: opened.store.usage, storage: opened.store.storageFeed, pricing, now: () => APRIL + 40 * DAY, keptRows });
    const commit = (...events: NormalizedEvent[]) => opened.store.commit({ events: events.map((event) => ({ tenantId, receivedAt: APRIL + 30 * DAY, event })), quarantine: [] });

    before(async () => {
      opened = await backend.open();
      ({ tenantId } = await newTenant(opened.store));
      await commit(put(MARCH + 3600 + 5, 'a', 5_000_000_000_000), getObject(MARCH + 2 * DAY, { provider: 'aws', bucket: 'media', customerId: 'c2', bytes: 1000 }));
    });
    after(async () => {
      await opened.close();
    });

    it('reuses a month while its version is unchanged, and prices it again when an event of it arrives', async () => {
      const costs = service();
      const first = await costs.priceMonth(tenantId, '2026-03');
      assert.ok(first.some((a) => a.rows.some((r) => r.repeat !== undefined)), 'stored bytes priced as runs');
      assert.equal(await costs.priceMonth(tenantId, '2026-03'), first, 'kept: the same rows, not priced again');

      // Events of April and later change nothing March depends on.
      await commit(put(APRIL + 5, 'b', 1000), getObject(APRIL + DAY, { provider: 'aws', bucket: 'media', customerId: 'c1', bytes: 10 }));
      assert.equal(await costs.priceMonth(tenantId, '2026-03'), first, 'still kept after later months changed');
      const april = await costs.priceMonth(tenantId, '2026-04');
      assert.deepEqual(april, await service(0).priceMonth(tenantId, '2026-04'));

      // A late event of March (a delete that ends the stored bytes): priced again.
      await commit({ action: 'DeleteObject', timestamp: MARCH + 10 * DAY, provider: 'aws', bucket: 'media', objectKey: 'a', customerId: 'c1' } as NormalizedEvent);
      const again = await costs.priceMonth(tenantId, '2026-03');
      assert.notDeepEqual(again, first, 'the delete changed the month');
      assert.deepEqual(again, await service(0).priceMonth(tenantId, '2026-03'), 'equal to pricing it afresh');
      // April's opening bytes changed too: it is priced again as well.
      assert.notDeepEqual(await costs.priceMonth(tenantId, '2026-04'), april);
    });

    it('prices a kept month again after `usage rebuild` in another process (of the tenant, and of every tenant), from the events whatever the rollups hold', async () => {
      const right = await service(0).priceMonth(tenantId, '2026-03');
      // The CLI's store: another instance on the same file or database, as another process opens it.
      const cli = await openSameData(opened.data);
      try {
        for (const tenant of [tenantId, null]) {
          // Costs read the events (usage/shapes.ts EVENTS): damaged rollups move nothing.
          await damageRollups(opened.data, tenantId, 1000);
          const costs = service();
          const kept = await costs.priceMonth(tenantId, '2026-03');
          assert.deepEqual(kept, right, 'priced from the events, not the damaged rollups');
          assert.equal(await costs.priceMonth(tenantId, '2026-03'), kept, 'and kept');
          // As `bucketmeter usage rebuild` runs it: the rollups of a range, then the inventory.
          await new UsageService(cli.usage, cli.inventory).rebuild(tenant, MARCH, APRIL + 40 * DAY);
          await cli.inventory.rebuild(tenant);
          const again = await costs.priceMonth(tenantId, '2026-03');
          assert.notEqual(again, kept, `priced again after the rebuild of ${tenant === null ? 'every tenant' : 'the tenant'}`);
          assert.deepEqual(again, right);
          assert.equal(await costs.priceMonth(tenantId, '2026-03'), again, 'and kept again');
        }
        // The inventory alone rebuilt (no damage to find): priced again all the same, to the same rows.
        const costs = service();
        const kept = await costs.priceMonth(tenantId, '2026-03');
        await cli.inventory.rebuild(null);
        const again = await costs.priceMonth(tenantId, '2026-03');
        assert.notEqual(again, kept, 'priced again after an inventory rebuild');
        assert.deepEqual(again, kept);
      } finally {
        await cli.close();
      }
    });

    it('keeps no more rows than it is given', async () => {
      const rows = (await service(0).priceMonth(tenantId, '2026-03')).reduce((n, a) => n + a.rows.length, 0);
      const small = service(rows - 1);
      const first = await small.priceMonth(tenantId, '2026-03');
      assert.notEqual(await small.priceMonth(tenantId, '2026-03'), first, 'too large to keep: priced each time');
      assert.deepEqual(await small.priceMonth(tenantId, '2026-03'), first);
      const fits = service(rows);
      const kept = await fits.priceMonth(tenantId, '2026-03');
      assert.equal(await fits.priceMonth(tenantId, '2026-03'), kept);
      // A second month pushes the first out (least recently used).
      await fits.priceMonth(tenantId, '2026-04');
      assert.notEqual(await fits.priceMonth(tenantId, '2026-03'), kept);
    });

    it('answers a repeated query from its kept answer only while every month it was made from is unchanged', async () => {
      const request = { from: MARCH, to: APRIL + 30 * DAY, granularity: 'day' as const, timeZone: 'UTC', groupBy: ['customerId' as const], filters: {}, format: 'json' as const, limit: 10_000, storage: false };
      const costs = service();
      const first = await costs.query(tenantId, request);
      assert.deepEqual(await costs.query(tenantId, request), first, 'asked again: the same answer');
      // A late event of March (c3 is new): the whole answer is made again, equal to a fresh service's.
      await commit(getObject(MARCH + 5 * DAY, { provider: 'aws', bucket: 'media', customerId: 'c3', bytes: 5000 }));
      const again = await costs.query(tenantId, request);
      assert.ok(again.rows.some((r) => r.dimensions.customerId === 'c3'), 'the late event is in the answer');
      assert.deepEqual(again, await service(0).query(tenantId, request));
      // An event of April only: March's part is reused, April's made again; still a fresh service's answer.
      await commit(getObject(APRIL + 2 * DAY, { provider: 'aws', bucket: 'media', customerId: 'c4', bytes: 5000 }));
      const april = await costs.query(tenantId, request);
      assert.ok(april.rows.some((r) => r.dimensions.customerId === 'c4'));
      assert.deepEqual(april, await service(0).query(tenantId, request));
    });
  });
}
