/**
 * A cost request whose client left stops pricing (README, "Reads whose client left"): the service
 * polls its `cancelled` between reads and pricing steps, and the cost thread sets it from the
 * request's signal. Counted in the reads that a real SQLite store's ports are asked for (wrapped to
 * count), and in the catch-ups the cost thread asks of the main thread before its reads.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CostService } from '../../src/costs/service.js';
import { CostThread } from '../../src/costs/thread.js';
import { BmError } from '../../src/errors.js';
import { loadPricing } from '../../src/pricing/setup.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import { ReadAbortedError } from '../../src/store/types.js';
import type { StorageFeed, UsageStore } from '../../src/store/types.js';
import { parseUsageParams } from '../../src/usage/params.js';
import { getObject, newTenant } from '../store/contract.js';
import { scratchDir } from '../support/scratch.js';

const MONTH_START = Date.UTC(2026, 2, 1) / 1000;
const HOUR = 3600;

describe('a cost request whose client left', () => {
  const temp = scratchDir('bm-cost-abandoned-');
  let store: SqliteStore;
  let tenantId: number;
  const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });
  const request = parseUsageParams({ from: '2026-03-01T00:00:00Z', to: '2026-04-01T00:00:00Z', groupBy: 'customerId' }, undefined, ['json']);

  /** The store's ports, each read counted (and `afterRead` called after it). */
  function counted(afterRead: () => void = () => {}) {
    const reads: string[] = [];
    const count = <T>(name: string, read: Promise<T>) =>
      read.then((result) => {
        reads.push(name);
        afterRead();
        return result;
      });
    const usage: Pick<UsageStore, 'query' | 'version'> = {
      query: (...args) => count('usage', store.usage.query(...args)),
      version: (...args) => count('version', store.usage.version(...args)),
    };
    const feed = store.storageFeed;
    const storage: StorageFeed = {
      storageDeltas: (...args) => count('deltas', feed.storageDeltas(...args)),
      storageIntervals: (...args) => count('intervals', feed.storageIntervals(...args)),
    };
    return { reads, service: new CostService({ usage, storage, pricing, keptRows: 0 }) };
  }

  before(async () => {
    store = await openSqliteStore({ path: join(temp.dir, 'cost.db') });
    ({ tenantId } = await newTenant(store));
    const events = [0, 1, 2].flatMap((h) => ['c1', 'c2'].map((customerId) => getObject(MONTH_START + h * HOUR + 5, { provider: 'aws', bucket: 'media', customerId, bytes: 1000 })));
    await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: MONTH_START + 10 * HOUR, event })), quarantine: [] });
  });
  after(async () => {
    await store.close();
    await temp.remove();
  });

  it('is not priced when its client left before it began', async () => {
    const { reads, service } = counted();
    await assert.rejects(service.query(tenantId, request, () => true), ReadAbortedError);
    assert.deepEqual(reads, []);
  });

  it('stops at the step after its client left', async () => {
    const whole = counted();
    const page = await whole.service.query(tenantId, request);
    assert.deepEqual(page.rows.map((r) => r.dimensions.customerId), ['c1', 'c2'], 'priced whole, for comparison');
    assert.ok(whole.reads.length > 2, `a whole pricing reads more than twice: ${whole.reads.join(', ')}`);

    let left = false;
    const stopped = counted(() => {
      left = true;
    });
    await assert.rejects(stopped.service.query(tenantId, request, () => left), ReadAbortedError);
    assert.deepEqual(stopped.reads, whole.reads.slice(0, 1), 'no read after the first, during which the client left');
    const export_ = counted(() => {
      left = true;
    });
    left = false;
    await assert.rejects(export_.service.fineRows(tenantId, request, () => left), ReadAbortedError);
    assert.deepEqual(export_.reads, whole.reads.slice(0, 1), 'the FOCUS export the same');
  });

  it('on the cost thread: answered at once as BM_ERR_CLIENT_CLOSED, and stopped by its next read', async () => {
    /**
     * A fresh cost thread (nothing kept) asked for a page, after `abandoned` requests whose client left;
     * the catch-ups it asked for (one before each read). They wait until the abandoned requests were
     * answered: one the thread took before its flag was set has asked for one, and stops after it.
     */
    async function catchUps(abandoned: number): Promise<string[]> {
      const asked: string[] = [];
      let open!: () => void;
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const caughtUp = store.threadReads.caughtUp!;
      const counting: typeof caughtUp = async (what) => {
        asked.push(what);
        await gate;
        return caughtUp(what);
      };
      const costs = new CostThread({ ...store.threadReads, caughtUp: counting }, { prices: undefined, bucketPlans: undefined });
      try {
        for (let i = 0; i < abandoned; i++) {
          const controller = new AbortController();
          const page = costs.page(tenantId, request, controller.signal);
          controller.abort();
          await assert.rejects(page, (err: unknown) => err instanceof BmError && err.code === 'BM_ERR_CLIENT_CLOSED');
        }
        open();
        // The thread takes requests in order: once this one is answered, the abandoned ones were handled.
        const page = await costs.page(tenantId, request);
        assert.deepEqual(JSON.parse(page.text).rows.map((r: { customerId: string }) => r.customerId), ['c1', 'c2']);
        return asked;
      } finally {
        await costs.close();
      }
    }
    const alone = await catchUps(0);
    assert.ok(alone.length >= 4, `a priced request asks for a catch-up before each of its reads: ${alone.join(', ')}`);
    const withAbandoned = await catchUps(3);
    assert.ok(withAbandoned.length <= alone.length + 3, `three abandoned requests asked for at most one catch-up each: ${withAbandoned.length} against ${alone.length} alone`);
  });
});
