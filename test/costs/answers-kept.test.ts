/**
 * Cost answers kept for asking again (CostService) are bounded by their rows, all together: a read
 * key asking distinct hourly ranges must not pin sixteen answers of up to a million rows (hundreds
 * of bytes each) on the cost thread's heap, whatever keptRows says (a review found 1.7 GB retained
 * after 16 queries of 144k rows with keptRows 0, and the thread dying of it), nor, with its months
 * kept, the months' groups each answer was merged from (a review found 412 MB of them beside the
 * bounded answers' 215 MB after 8 hourly answers).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, describe, it } from 'node:test';
import { CostService } from '../../src/costs/service.js';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { loadPricing } from '../../src/pricing/setup.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { Store } from '../../src/store/types.js';
import { newTenant } from '../store/contract.js';
import { scratchDir } from '../support/scratch.js';

const MARCH = Date.UTC(2026, 2, 1) / 1000;
const APRIL = Date.UTC(2026, 3, 1) / 1000;
const DAY = 86400;
/** Each stores bytes all month: a row per customer and hour (21,600 rows an answer). */
const CUSTOMERS = 30;
const QUERIES = 8;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapMb = () => {
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

/** March by the hour per customer, its last `q` hours left out: a distinct answer for each q. */
const hourly = (q: number) => ({ from: MARCH, to: APRIL - q * 3600, granularity: 'hour' as const, timeZone: 'UTC', groupBy: ['customerId' as const], filters: {}, format: 'json' as const, limit: 1, storage: false });

describe('cost: answers kept', () => {
  let store: Store;
  let remove: () => Promise<void>;
  let tenantId: number;

  before(async () => {
    const temp = scratchDir('bm-cost-answers-');
    remove = temp.remove;
    store = await openSqliteStore({ path: join(temp.dir, 'cost.db') });
    ({ tenantId } = await newTenant(store));
    const events = Array.from({ length: CUSTOMERS }, (_, i) => ({
      tenantId,
      receivedAt: APRIL,
      event: { action: 'PutObject', timestamp: MARCH + 5, provider: 'aws', bucket: 'media', objectKey: `o${i}`, bytes: 1_000_000 + i, customerId: `c${i}` } as NormalizedEvent,
    }));
    await store.commit({ events, quarantine: [] });
  });
  after(async () => {
    await store.close();
    await remove();
  });

  for (const keptRows of [0, undefined]) {
    // With its months kept (keptRows unset), each month's groups for an answer are kept too: counted with the whole answers.
    it(`holds no more rows than keptAnswerRows, however many distinct ranges are asked (keptRows ${keptRows ?? 'default'})`, async () => {
      const costs = new CostService({ usage: store.usage, storage: store.storageFeed, pricing: loadPricing({ prices: undefined, bucketPlans: undefined }), now: () => APRIL + 40 * DAY, ...(keptRows === undefined ? {} : { keptRows }), keptAnswerRows: 1000 });
      // The month priced and kept first: what is measured is what the answers add.
      await costs.priceMonth(tenantId, '2026-03');
      const before = heapMb();
      for (let q = 0; q < QUERIES; q++) {
        const page = await costs.query(tenantId, hourly(q));
        assert.equal(page.rows.length, 1);
      }
      // Unbounded: about 8 × 21,600 rows × ~660 bytes ≈ 110 MB held as whole answers, as much again as the month's groups.
      const held = heapMb() - before;
      assert.ok(held < 40, `${held.toFixed(0)} MB of the heap held after ${QUERIES} answers of ${CUSTOMERS * 720} rows`);
      // The service used after the measure: collected before it (its variable dead), it would hold nothing.
      assert.equal((await costs.query(tenantId, hourly(QUERIES - 1))).rows.length, 1);
    });
  }
});
