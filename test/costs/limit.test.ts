/**
 * The per-request bound on what cost prices (BM_ERR_COST_TOO_LARGE, 422): past it the request is
 * refused with the bound in its message, a provider filter prices only that provider's account
 * (so it fits), and under the bound both answers agree with the unbounded one. A month past it is
 * refused after its first day past it, and at once after (its usage rows only grow). A real SQLite store.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CostService } from '../../src/costs/service.js';
import { BmError } from '../../src/errors.js';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { loadPricing } from '../../src/pricing/setup.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import { getObject, newTenant } from '../store/contract.js';
import { scratchDir } from '../support/scratch.js';
import type { UsageRequest } from '../../src/usage/params.js';

const MONTH_START = Date.UTC(2026, 2, 1) / 1000;
const HOUR = 3600;

describe('cost: the bound on key × hour quantities per request', () => {
  const temp = scratchDir('bm-cost-limit-');
  let store: SqliteStore;
  let tenantId: number;
  const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });
  const service = (maxKeyHours?: number) => new CostService({ usage: store.usage, storage: store.storageFeed, pricing, maxKeyHours });
  const request = (provider?: string) => ({ from: MONTH_START, to: MONTH_START + 31 * 24 * HOUR, filters: provider === undefined ? {} : { provider: [provider] } });

  before(async () => {
    store = await openSqliteStore({ path: join(temp.dir, 'cost.db') });
    ({ tenantId } = await newTenant(store));
    // aws: 2 customers × 3 hours = 6 key-hours of requests; backblaze: 1.
    const events = [
      ...[0, 1, 2].flatMap((h) => ['c1', 'c2'].map((customerId) => getObject(MONTH_START + h * HOUR + 5, { provider: 'aws', bucket: 'media', customerId, bytes: 1000 }))),
      getObject(MONTH_START + 7, { provider: 'backblaze', bucket: 'archive', customerId: 'c1', bytes: 1000 }),
    ];
    await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: MONTH_START + 10 * HOUR, event })), quarantine: [] });
  });
  after(async () => {
    await store.close();
    await temp.remove();
  });

  it('refuses a request past the bound, naming the bound, and prices a provider that fits it', async () => {
    const unbounded = await service().fineRows(tenantId, request());
    const keyHours = new Set(unbounded.flatMap((a) => a.rows.map((r) => JSON.stringify([r.hour, r.provider, r.key]))));
    assert.equal(keyHours.size, 7, 'the events make 7 key × hour quantities');

    await assert.rejects(service(6).fineRows(tenantId, request()), (err: unknown) => {
      assert.ok(err instanceof BmError);
      assert.equal(err.code, 'BM_ERR_COST_TOO_LARGE');
      assert.match(err.message, /more than the 6 attribution key × hour quantities/);
      return true;
    });
    const backblaze = await service(6).fineRows(tenantId, request('backblaze'));
    assert.deepEqual(backblaze, unbounded.filter((a) => a.rows.every((r) => r.provider === 'backblaze')));
    // At the bound exactly, the whole answer is priced and equals the unbounded one.
    assert.deepEqual(await service(7).fineRows(tenantId, request()), unbounded);
  });

  it('refuses an answer of more rows (groups × windows) than its bound, and gives the unbounded one at the bound exactly', async () => {
    // Stored bytes are priced in every hour they stand: 3 customers' objects, priced by the hour over
    // two months' edges (March 31 22:00 to April 1 04:00, 6 windows) are 18 rows from 3 runs priced.
    const { tenantId: stored } = await newTenant(store);
    const APRIL = MONTH_START + 31 * 24 * HOUR;
    const puts = ['c1', 'c2', 'c3'].map((customerId, i) => ({ action: 'PutObject', timestamp: MONTH_START + i, provider: 'aws', bucket: 'media', objectKey: `o${i}`, bytes: 5_000_000_000, customerId }) as NormalizedEvent);
    await store.commit({ events: puts.map((event) => ({ tenantId: stored, receivedAt: MONTH_START + 10, event })), quarantine: [] });
    const hourly: UsageRequest = { from: APRIL - 2 * HOUR, to: APRIL + 4 * HOUR, granularity: 'hour', timeZone: 'UTC', groupBy: ['customerId'], filters: {}, format: 'json', limit: 100_000, storage: false };
    const answer = (maxAnswerRows?: number) => new CostService({ usage: store.usage, storage: store.storageFeed, pricing, maxAnswerRows }).query(stored, hourly);
    const unbounded = await answer();
    assert.deepEqual(unbounded.rows.map((r) => r.dimensions.customerId).sort(), Array.from({ length: 6 }, () => ['c1', 'c2', 'c3']).flat().sort());
    for (const most of [17, 12, 5]) {
      await assert.rejects(answer(most), (err: unknown) => {
        assert.ok(err instanceof BmError);
        assert.equal(err.code, 'BM_ERR_ANSWER_TOO_LARGE');
        assert.match(err.message, new RegExp(`more than the ${most} rows \\(groups × windows\\) a request may hold`));
        return true;
      });
    }
    assert.deepEqual(await answer(18), unbounded);
  });

  describe('a month past the bound', () => {
    let spread = 0;
    /** The service's reads of the events' usage (its month's requests and egress), counted. */
    let usageReads = 0;
    const counted = (maxKeyHours: number) =>
      new CostService({
        usage: {
          query: (tenant, query, signal) => {
            if (query.terms.some((t) => t.shape.name === 'events')) usageReads++;
            return store.usage.query(tenant, query, signal);
          },
          version: (tenant, toDay, signal) => store.usage.version(tenant, toDay, signal),
        },
        storage: store.storageFeed,
        pricing,
        maxKeyHours,
      });
    const refused = (err: unknown) => err instanceof BmError && err.code === 'BM_ERR_COST_TOO_LARGE';
    before(async () => {
      ({ tenantId: spread } = await newTenant(store));
      // One key-hour on each of the month's first 10 days.
      const events = Array.from({ length: 10 }, (_, d) => getObject(MONTH_START + d * 24 * HOUR + 5, { provider: 'aws', bucket: 'media', customerId: 'c1', bytes: 1 }));
      await store.commit({ events: events.map((event) => ({ tenantId: spread, receivedAt: MONTH_START + 40 * 24 * HOUR, event })), quarantine: [] });
    });

    it('is refused after the day that passes the bound, its later days not read', async () => {
      usageReads = 0;
      await assert.rejects(counted(2).fineRows(spread, request()), refused);
      // Days 1 and 2 fit the bound of 2; day 3 passes it. Read whole, it was one read of every day.
      assert.equal(usageReads, 3);
      usageReads = 0;
      const priced = await counted(10).fineRows(spread, request());
      assert.equal(new Set(priced.flatMap((a) => a.rows.map((r) => r.hour))).size, 10, 'a key-hour of every day priced');
      assert.equal(usageReads, 31, 'priced whole: a read per day of the month');
    });

    it('is refused again at once, whatever events of it come later (its usage rows alone passed the bound, and they never become fewer)', async () => {
      const costs = counted(2);
      await assert.rejects(costs.fineRows(spread, request()), refused);
      usageReads = 0;
      await assert.rejects(costs.fineRows(spread, request()), refused);
      assert.equal(usageReads, 0, 'the refusal was remembered with the month');
      // A provider filter is another question: read.
      await assert.rejects(costs.fineRows(spread, request('aws')), refused);
      assert.equal(usageReads, 3);
      // A late event of the month (a new key × hour): refused at once still, as the month still taking events is.
      await store.commit({ events: [{ tenantId: spread, receivedAt: MONTH_START + 41 * 24 * HOUR, event: getObject(MONTH_START + 20 * 24 * HOUR, { provider: 'aws', bucket: 'media', customerId: 'c2', bytes: 1 }) }], quarantine: [] });
      usageReads = 0;
      await assert.rejects(costs.fineRows(spread, request()), refused);
      assert.equal(usageReads, 0);
      // A service that remembers nothing reads it, and refuses it too: the memory gave the same answer.
      await assert.rejects(counted(2).fineRows(spread, request()), refused);
      assert.equal(usageReads, 3);
    });

    it('refused for its stored objects (not its usage rows), is refused at once only while it has not changed', async () => {
      const { tenantId: stored } = await newTenant(store);
      // Four key × hours of requests fit the bound of 5; the stored bytes' rows and runs of the four keys do not.
      const puts = Array.from({ length: 4 }, (_, i) => ({ action: 'PutObject', timestamp: MONTH_START + 5 + i, provider: 'aws', bucket: 'media', objectKey: `o${i}`, bytes: 100, customerId: `c${i}` }) as NormalizedEvent);
      await store.commit({ events: puts.map((event) => ({ tenantId: stored, receivedAt: MONTH_START + 40 * 24 * HOUR, event })), quarantine: [] });
      const costs = counted(5);
      usageReads = 0;
      await assert.rejects(costs.fineRows(stored, request()), refused);
      assert.equal(usageReads, 31, 'its usage was read whole: the refusal came after');
      usageReads = 0;
      await assert.rejects(costs.fineRows(stored, request()), refused);
      assert.equal(usageReads, 0, 'unchanged: refused from memory');
      // An event of the month: stored objects are not only ever more (a delete ends one), so it is read again.
      await store.commit({ events: [{ tenantId: stored, receivedAt: MONTH_START + 41 * 24 * HOUR, event: getObject(MONTH_START + 3 * 24 * HOUR, { provider: 'aws', bucket: 'media', customerId: 'c0', bytes: 1 }) }], quarantine: [] });
      await assert.rejects(costs.fineRows(stored, request()), refused);
      assert.equal(usageReads, 31);
    });

    it('is not remembered when it was refused only because an earlier month of the request used part of the bound', async () => {
      const { tenantId: two } = await newTenant(store);
      const APRIL = MONTH_START + 31 * 24 * HOUR;
      // March: 8 key-hours; April: 5.
      const events = [
        ...Array.from({ length: 8 }, (_, d) => getObject(MONTH_START + d * 24 * HOUR + 5, { provider: 'aws', bucket: 'media', customerId: 'c1', bytes: 1 })),
        ...Array.from({ length: 5 }, (_, d) => getObject(APRIL + d * 24 * HOUR + 5, { provider: 'aws', bucket: 'media', customerId: 'c1', bytes: 1 })),
      ];
      await store.commit({ events: events.map((event) => ({ tenantId: two, receivedAt: APRIL + 40 * 24 * HOUR, event })), quarantine: [] });
      const costs = counted(10);
      // Both months: March takes 8 of the 10, April's 5 do not fit what is left.
      await assert.rejects(costs.fineRows(two, { from: MONTH_START, to: APRIL + 30 * 24 * HOUR, filters: {} }), refused);
      // April alone fits the bound: priced, not refused from memory.
      const april = await costs.fineRows(two, { from: APRIL, to: APRIL + 30 * 24 * HOUR, filters: {} });
      assert.equal(new Set(april.flatMap((a) => a.rows.map((r) => r.hour))).size, 5);
    });
  });
});
