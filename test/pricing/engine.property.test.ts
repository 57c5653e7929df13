/** The engine against the independent reference, and the exact-sum property, over generated months. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { groupCosts } from '../support/cost-groups.js';
import type { CostDimension } from '../../src/pricing/aggregate.js';
import { priceMonth, rowsOf } from '../../src/pricing/engine.js';
import type { CostRow } from '../../src/pricing/engine.js';
import { sumCosts } from '../../src/pricing/money.js';
import { PLAN_IDS, accountMonthArb, accountMonthWithRunsArb, hourByHour } from './generate.js';
import { referenceCosts } from './reference.js';

const byId = (rows: CostRow[]) => new Map(rows.map((r) => [`${r.charge}|${r.hour}|${r.key === null ? 'unallocated' : JSON.stringify(r.key)}`, r.cost]));

describe('pricing engine', () => {
  it('agrees with the reference model on every fine row, for every plan and metering kind', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(accountMonthArb, (input) => {
        seen.add(input.planId);
        const rows = priceMonth(input);
        assert.equal(rows.length, byId(rows).size, 'one row per charge, hour and key');
        assert.deepEqual(byId(rows), referenceCosts(input));
      }),
      { numRuns: 400 },
    );
    assert.deepEqual([...seen].sort(), [...PLAN_IDS].sort(), 'every plan was exercised');
  });

  it('prices a run of hours as each of its hours: the same rows, equal to the reference', () => {
    let repeated = 0;
    fc.assert(
      fc.property(accountMonthWithRunsArb, (input) => {
        const runs = priceMonth(input);
        repeated += runs.filter((r) => r.repeat !== undefined).length;
        const rows = runs.flatMap((r) => [...rowsOf(r)]);
        const hourly = hourByHour(input);
        assert.equal(rows.length, byId(rows).size, 'one row per charge, hour and key');
        assert.deepEqual(rows.map((r) => JSON.stringify(r)).sort(), priceMonth(hourly).map((r) => JSON.stringify(r)).sort(), 'the rows of its hours, to the last field');
        assert.deepEqual(byId(rows), referenceCosts(hourly));
      }),
      { numRuns: 150 },
    );
    assert.ok(repeated > 0, 'runs were priced as runs');
  });

  it('every grouping adds up to the ungrouped total to the last digit', () => {
    const dims: CostDimension[] = ['customerId', 'featureId', 'clientType', 'clientId', 'bucket', 'action', 'provider'];
    const windows: ((h: number) => number)[] = [(h) => h, (h) => h - (h % 86400), () => 0];
    fc.assert(
      fc.property(accountMonthArb, fc.subarray(dims), fc.constantFrom(...windows), (input, groupBy, windowOf) => {
        const rows = priceMonth(input);
        const total = sumCosts(rows.map((r) => r.cost));
        const groups = groupCosts(rows, groupBy, windowOf, 'aws');
        assert.equal(sumCosts(groups.map((g) => g.totalCost)), total);
        for (const g of groups) assert.equal(sumCosts([g.storageCost, g.requestCost, g.egressCost, g.otherCost]), g.totalCost);
        const none = groupCosts(rows, [], () => 0);
        assert.equal(sumCosts(none.map((g) => g.totalCost)), total);
      }),
      { numRuns: 200 },
    );
  });
});
