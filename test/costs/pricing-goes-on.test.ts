/**
 * A month's pricing goes on after the request that began it left, while it can still be kept
 * (README, "Costs not priced yet"): a first pricing at 10M events takes minutes, longer than any
 * request waits, so a pricing stopped with its request would never end. Requests for the same month
 * at the same version share one pricing; at most two months are priced at once. Counted in the reads
 * that a real SQLite store's ports are asked for (wrapped to count). And on the cost thread: a request
 * not answered within its bound gets 503 BM_ERR_COST_NOT_READY with Retry-After.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
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
import { tempDir } from '../support/server.js';

const HOUR = 3600;
const MONTHS = ['2026-03', '2026-04', '2026-05'];
const startOf = (month: string) => Date.parse(`${month}-01T00:00:00Z`) / 1000;
const monthQuery = (month: string) => {
  const next = new Date(Date.parse(`${month}-01T00:00:00Z`));
  next.setUTCMonth(next.getUTCMonth() + 1);
  return parseUsageParams({ from: `${month}-01T00:00:00Z`, to: next.toISOString().replace('.000Z', 'Z'), groupBy: 'customerId' }, undefined, ['json']);
};

describe('a month being priced', () => {
  const temp = scratchDir('bm-cost-goes-on-');
  let store: SqliteStore;
  let tenantId: number;
  const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });

  /**
   * The store's ports, each read noted with the month it reads (by the start of its range) and
   * `afterRead` called after it; `keptRows` as CostDeps.
   */
  function counted(afterRead: (read: string) => Promise<void> | void = () => {}, keptRows?: number) {
    const reads: string[] = [];
    const monthOf = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 7);
    const count = <T>(name: string, read: Promise<T>) =>
      read.then(async (result) => {
        reads.push(name);
        await afterRead(name);
        return result;
      });
    const usage: Pick<UsageStore, 'query' | 'version'> = {
      query: (tenant, q) => count(`usage ${monthOf(q.terms[0]!.spans[0]!.from * HOUR)}`, store.usage.query(tenant, q)),
      version: (...args) => count('version', store.usage.version(...args)),
    };
    const feed = store.storageFeed;
    const storage: StorageFeed = {
      storageDeltas: (tenant, from, to) => count(`deltas ${monthOf(from)}`, feed.storageDeltas(tenant, from, to)),
      storageIntervals: (...args) => count('intervals', feed.storageIntervals(...args)),
    };
    return { reads, service: new CostService({ usage, storage, pricing, ...(keptRows === undefined ? {} : { keptRows }) }) };
  }

  const customers = (page: { rows: { dimensions: Record<string, string | null> }[] }) => page.rows.map((r) => r.dimensions.customerId);
  let late = 0;
  /** One more event in `month`: its version changes. */
  const addEvent = (month: string) =>
    store.commit({
      events: [{ tenantId, receivedAt: startOf(month) + 20 * HOUR, event: getObject(startOf(month) + 7 * HOUR + late++, { provider: 'aws', bucket: 'media', customerId: 'late', bytes: 10 }) }],
      quarantine: [],
    });

  before(async () => {
    store = await openSqliteStore({ path: join(temp.dir, 'cost.db') });
    ({ tenantId } = await newTenant(store));
    const events = MONTHS.flatMap((month) =>
      [0, 1, 2].flatMap((h) => ['c1', 'c2'].map((customerId) => getObject(startOf(month) + h * HOUR + 5, { provider: 'aws', bucket: 'media', customerId, bytes: 1000 }))),
    );
    await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: startOf('2026-06') + HOUR, event })), quarantine: [] });
  });
  after(async () => {
    await store.close();
    await temp.remove();
  });

  it('goes on to its end after its client left, and is kept: asked again, only its version is read', async () => {
    const whole = counted();
    assert.deepEqual(customers(await whole.service.query(tenantId, monthQuery('2026-03'))), ['c1', 'c2']);

    let left = false;
    const abandoned = counted(() => {
      left = true;
    });
    // Its answer, if any, is nobody's (the cost thread drops it): what matters is what was read and kept.
    await abandoned.service.query(tenantId, monthQuery('2026-03'), () => left).catch((err: unknown) => assert.ok(err instanceof ReadAbortedError, String(err)));
    assert.equal(left, true);
    // Its reads are the whole pricing's, each preceded (once nobody waits) by a version read, which agreed.
    assert.deepEqual(
      abandoned.reads.filter((r) => r !== 'version'),
      whole.reads.filter((r) => r !== 'version'),
      'priced to its end',
    );
    const before = abandoned.reads.length;
    assert.deepEqual(customers(await abandoned.service.query(tenantId, monthQuery('2026-03'))), ['c1', 'c2']);
    assert.deepEqual(abandoned.reads.slice(before), ['version'], 'asked again: kept, only the version read');
  });

  it('stops once nobody waits and the month has changed (it could not be kept)', async () => {
    const whole = counted();
    await whole.service.query(tenantId, monthQuery('2026-04'));
    const priced = whole.reads.filter((r) => r !== 'version').length;

    let left = false;
    const abandoned = counted(async (read) => {
      if (left || read === 'version') return;
      // The client leaves during the first read, and an event of the month lands.
      left = true;
      await addEvent('2026-04');
    });
    await assert.rejects(abandoned.service.query(tenantId, monthQuery('2026-04'), () => left), ReadAbortedError);
    assert.deepEqual(abandoned.reads, ['version', 'usage 2026-04', 'version'], 'stopped at the version read after its first read');
    assert.ok(priced > 1, `a whole pricing reads more than once: ${whole.reads.join(', ')}`);

    // Not kept: asked again, priced again (at the new version, the late event in it).
    const before = abandoned.reads.length;
    assert.deepEqual(customers(await abandoned.service.query(tenantId, monthQuery('2026-04'))), ['c1', 'c2', 'late']);
    assert.equal(abandoned.reads.slice(before).filter((r) => r !== 'version').length, priced);
  });

  it('stops with its request when months are not kept (keptRows 0): its work could not be reused', async () => {
    let left = false;
    const abandoned = counted(() => {
      left = true;
    }, 0);
    await assert.rejects(abandoned.service.query(tenantId, monthQuery('2026-05'), () => left), ReadAbortedError);
    assert.deepEqual(abandoned.reads, ['version'], 'no read after the first, during which the client left');
  });

  it('is priced once for requests of the same month at the same version', async () => {
    await addEvent('2026-05');
    const alone = counted();
    await alone.service.query(tenantId, monthQuery('2026-05'));
    const both = counted();
    const [a, b] = await Promise.all([both.service.query(tenantId, monthQuery('2026-05')), both.service.query(tenantId, monthQuery('2026-05'))]);
    assert.deepEqual(customers(a), ['c1', 'c2', 'late']);
    assert.deepEqual(customers(b), customers(a));
    assert.deepEqual(
      both.reads.filter((r) => r !== 'version'),
      alone.reads.filter((r) => r !== 'version'),
      'one pricing for both',
    );
  });

  it('is one of at most two months priced at once: a third month waits for one of them to end', async () => {
    await addEvent('2026-03');
    const { reads, service } = counted();
    const pages = await Promise.all(MONTHS.map((month) => service.query(tenantId, monthQuery(month))));
    assert.deepEqual(pages.map(customers), [
      ['c1', 'c2', 'late'],
      ['c1', 'c2', 'late'],
      ['c1', 'c2', 'late'],
    ]);
    // A month's stored bytes are its last read (deltas, then no interval reads without minimum sizes): the third
    // month's first read comes after the first two months' last.
    const first = (month: string) => reads.indexOf(`usage ${month}`);
    const last = (month: string) => reads.lastIndexOf(`deltas ${month}`);
    assert.ok(first(MONTHS[0]!) >= 0 && first(MONTHS[1]!) >= 0 && first(MONTHS[2]!) >= 0, reads.join(', '));
    assert.ok(first(MONTHS[1]!) < last(MONTHS[0]!), `the first two months are priced at once: ${reads.join(', ')}`);
    assert.ok(first(MONTHS[2]!) > Math.min(last(MONTHS[0]!), last(MONTHS[1]!)), `the third waits for one of them: ${reads.join(', ')}`);
  });
});

describe('a cost request not answered within its bound', () => {
  it('gets 503 BM_ERR_COST_NOT_READY with Retry-After, and the thread answers the next request', async () => {
    const dir = tempDir();
    const script = join(dir, 'worker.mjs');
    const real = new URL('../../src/costs/worker.js', import.meta.url).href;
    // The first message is never answered (a month priced for minutes); the thread then runs the real worker.
    writeFileSync(
      script,
      `import { parentPort } from 'node:worker_threads';
let first = true;
const held = (message) => { if (first) { first = false; parentPort.off('message', held); import(${JSON.stringify(real)}); } };
parentPort.on('message', held);
`,
    );
    const store = await openSqliteStore({ path: join(dir, 'cost.db') });
    const costs = new CostThread(store.threadReads, { prices: undefined, bucketPlans: undefined, answerWithinMs: 300 }, pathToFileURL(script));
    try {
      const query = parseUsageParams({ from: '2026-09-01T00:00:00Z', to: '2026-09-02T00:00:00Z' }, undefined, ['json']);
      const started = Date.now();
      // Without its bound the request would wait for good: failed here instead, after 10 s.
      const stuck = new Promise<never>((_, fail) => setTimeout(() => fail(new Error('no answer within 10 s')), 10_000).unref());
      await assert.rejects(Promise.race([costs.page(1, query), stuck]), (err: unknown) => {
        assert.ok(err instanceof BmError, String(err));
        assert.equal(err.code, 'BM_ERR_COST_NOT_READY');
        assert.equal(err.status, 503);
        assert.equal(err.extra.retryAfter, 10);
        return true;
      });
      assert.ok(Date.now() - started >= 290, 'not before its bound');
      // Asked again after each 503, as a client does: the real worker's start may pass 0.3 s on a loaded machine.
      const again = async (): Promise<string> => {
        try {
          return (await costs.page(1, query)).text;
        } catch (err) {
          if (!(err instanceof BmError && err.code === 'BM_ERR_COST_NOT_READY') || Date.now() - started > 10_000) throw err;
          return again();
        }
      };
      assert.deepEqual(JSON.parse(await again()).rows, []);
    } finally {
      await costs.close();
      await store.close();
    }
  });
});
