/**
 * The months a cost thread prices at once share one bound (README "Cost": the thread's memory is
 * sized for maxKeyHours quantities, not for that many per month): two months that each fit it alone
 * but not together are both priced, the quantities held at once never past it; the one that would
 * pass it gives back what it took and prices again alone, so neither waits for the other for good,
 * and a month that fits alone is never refused nor remembered as too large for another's quantities.
 * A real SQLite store; each day's read of a month can be held until the other month has read.
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
const DAY = 24 * HOUR;
/** The pool: each month below fits it alone, two of them together do not. */
const POOL = 15;
const startOf = (month: string) => Date.parse(`${month}-01T00:00:00Z`) / 1000;
const monthQuery = (month: string) => {
  const next = new Date(startOf(month) * 1000);
  next.setUTCMonth(next.getUTCMonth() + 1);
  return parseUsageParams({ from: `${month}-01T00:00:00Z`, to: next.toISOString().replace('.000Z', 'Z'), groupBy: 'customerId' }, undefined, ['json']);
};
const tooLarge = (err: unknown) => err instanceof BmError && err.code === 'BM_ERR_COST_TOO_LARGE';
/** Lets every step already due run (a read's rows counted against the bound, say). */
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((next) => setImmediate(next));
};

describe('months priced at once in a cost thread', () => {
  const temp = scratchDir('bm-cost-pool-');
  let store: SqliteStore;
  const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });

  /**
   * A service bounded at POOL (`keptRows` as CostDeps), its usage reads noted as `YYYY-MM-DD`
   * (the day read), each first awaiting `hold(day)`.
   */
  const service = (hold: (day: string) => Promise<void> | void = () => {}, keptRows?: number) => {
    const reads: string[] = [];
    const usage: Pick<UsageStore, 'query' | 'version'> = {
      query: async (tenant, q, signal) => {
        const day = new Date(q.terms[0]!.spans[0]!.from * HOUR * 1000).toISOString().slice(0, 10);
        await hold(day);
        const rows = await store.usage.query(tenant, q, signal);
        reads.push(day);
        return rows;
      },
      version: (...args) => store.usage.version(...args),
    };
    return { reads, costs: new CostService({ usage, storage: store.storageFeed, pricing, maxKeyHours: POOL, ...(keptRows === undefined ? {} : { keptRows }) }) };
  };
  /** Resolves once `day` has been read (in `reads`, noted as it is), then lets what follows that read run. */
  const readOf = (reads: string[], day: string) =>
    (async () => {
      while (!reads.includes(day)) await new Promise((next) => setImmediate(next));
      await settle();
    })();

  /** A tenant with `keyHours[month]` key × hour quantities on each day of the month, from its first (a customer each, at 00:00). */
  const tenantWith = async (keyHours: Record<string, number[]>) => {
    const { tenantId } = await newTenant(store);
    const events = Object.entries(keyHours).flatMap(([month, days]) =>
      days.flatMap((n, d) => Array.from({ length: n }, (_, c) => getObject(startOf(month) + d * DAY + 5, { provider: 'aws', bucket: 'media', customerId: `c${c}`, bytes: 1000 + d }))),
    );
    await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: startOf('2026-07'), event })), quarantine: [] });
    return tenantId;
  };
  /** Each month's answer from a service of the same bound pricing it alone. */
  const alone = async (tenantId: number, months: string[]) => {
    const { costs } = service();
    const pages = [];
    for (const month of months) pages.push(await costs.query(tenantId, monthQuery(month)));
    return pages;
  };

  before(async () => {
    store = await openSqliteStore({ path: join(temp.dir, 'cost.db') });
  });
  after(async () => {
    await store.close();
    await temp.remove();
  });

  it('prices two months that pass the bound together but each fit it alone, never holding more than it at once', async () => {
    // 10 quantities each, all on the first day: March holds its 10 while April reads its own (April's first
    // day read after March's, March's second after April's first).
    const tenantId = await tenantWith({ '2026-03': [10], '2026-04': [10] });
    const expected = await alone(tenantId, ['2026-03', '2026-04']);
    const { reads, costs } = service((day) => (day === '2026-04-01' ? readOf(reads, '2026-03-01') : day === '2026-03-02' ? readOf(reads, '2026-04-01') : undefined));
    const pages = await Promise.all([costs.query(tenantId, monthQuery('2026-03')), costs.query(tenantId, monthQuery('2026-04'))]);
    assert.deepEqual(pages, expected, 'both answered as each alone');
    assert.equal(pages[0]!.rows.length, 10);
    assert.ok(reads.indexOf('2026-04-01') < reads.lastIndexOf('2026-03-31'), `April was read while March was priced: ${reads.join(' ')}`);
    assert.equal(reads.filter((r) => r === '2026-04-01').length, 2, 'April, past the pool while March held it, began again');
    assert.ok(costs.quantitiesPeak <= POOL, `at most ${POOL} held at once, ${costs.quantitiesPeak} were`);
    assert.equal(costs.quantitiesPeak, 10, "one month's quantities at most");
  });

  it('refuses and remembers a month too large alone; one that fits, past the pool beside it, is priced, not refused nor remembered', async () => {
    // May: 20 quantities over its first two days (too large alone); April: 10 on its first.
    const tenantId = await tenantWith({ '2026-04': [10], '2026-05': [10, 10] });
    const [april] = await alone(tenantId, ['2026-04']);
    // Not kept: asked again, a month is priced again unless its refusal was remembered.
    const { reads, costs } = service((day) => (day === '2026-04-01' ? readOf(reads, '2026-05-01') : day === '2026-05-02' ? readOf(reads, '2026-04-01') : undefined), 0);
    const [may, aprilPage] = await Promise.allSettled([costs.query(tenantId, monthQuery('2026-05')), costs.query(tenantId, monthQuery('2026-04'))]);
    assert.ok(may.status === 'rejected' && tooLarge(may.reason), `May is refused: ${String(may.status === 'rejected' ? may.reason : 'answered')}`);
    assert.deepEqual(aprilPage.status === 'fulfilled' ? aprilPage.value : aprilPage.reason, april, 'April answered as alone');
    assert.equal(reads.filter((r) => r === '2026-04-01').length, 2, `April passed the pool beside May and began again: ${reads.join(' ')}`);
    assert.ok(costs.quantitiesPeak <= POOL, `${costs.quantitiesPeak} held at once`);

    const before = reads.length;
    await assert.rejects(costs.query(tenantId, monthQuery('2026-05')), tooLarge);
    assert.equal(reads.length, before, 'May refused from memory, nothing read');
    assert.deepEqual(await costs.query(tenantId, monthQuery('2026-04')), april);
    assert.equal(reads.length - before, 30, 'April priced again (not kept), not refused: a read of each of its days');
  });

  it('starts no other month while one that passed the pool waits to price alone, nor beside it: it is not put off again', { timeout: 60_000 }, async () => {
    // As the first: April passes the pool beside March. May (6 quantities: not beside April's 10) is asked meanwhile.
    const tenantId = await tenantWith({ '2026-03': [10], '2026-04': [10], '2026-05': [6] });
    const expected = await alone(tenantId, ['2026-03', '2026-04', '2026-05']);
    const { reads, costs } = service((day) => (day === '2026-04-01' ? readOf(reads, '2026-03-01') : day === '2026-03-02' ? readOf(reads, '2026-04-01') : undefined));
    const march = costs.query(tenantId, monthQuery('2026-03'));
    const april = costs.query(tenantId, monthQuery('2026-04'));
    const may = readOf(reads, '2026-04-01').then(() => costs.query(tenantId, monthQuery('2026-05')));
    assert.deepEqual(await Promise.all([march, april, may]), expected);
    assert.equal(reads.filter((r) => r === '2026-04-01').length, 2, `April began again: ${reads.join(' ')}`);
    assert.ok(reads.indexOf('2026-05-01') > reads.lastIndexOf('2026-04-30'), `May waited for April's pricing alone to end: ${reads.join(' ')}`);
    assert.equal(costs.quantitiesPeak, 10);
  });

  it('ends when two pricings each hold part of the pool and each need more (neither waits for the other for good)', { timeout: 60_000 }, async () => {
    // 12 quantities each (5, 5 and 2 on the first three days): each month's second day is read once the other
    // month read its first, so both hold 5 and both need 7 more of the 5 left.
    const tenantId = await tenantWith({ '2026-03': [5, 5, 2], '2026-04': [5, 5, 2] });
    const expected = await alone(tenantId, ['2026-03', '2026-04']);
    const { reads, costs } = service((day) => (day === '2026-03-02' ? readOf(reads, '2026-04-01') : day === '2026-04-02' ? readOf(reads, '2026-03-01') : undefined));
    const pages = await Promise.all([costs.query(tenantId, monthQuery('2026-03')), costs.query(tenantId, monthQuery('2026-04'))]);
    assert.deepEqual(pages, expected);
    assert.equal(reads.filter((r) => r.endsWith('-01')).length, 3, `one of them began again: ${reads.join(' ')}`);
    assert.ok(costs.quantitiesPeak <= POOL, `${costs.quantitiesPeak} held at once`);
  });
});
