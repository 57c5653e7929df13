/**
 * The columnar pricing path (src/pricing/columns.ts) against the object path it replaced on the
 * request path, over generated months (test/pricing/generate.ts, every shipped plan): requests and
 * egress given as columns price to the same rows as the same quantities given as objects (and agree
 * with the independent reference model); answers grouped from the columns (addCostColumns) equal
 * the rows as objects, each hour of a run apart, cut to the range and filtered by hand, grouped by
 * groupCosts; the rows a FOCUS export writes (selectRows) are those same hours; and amounts past 64
 * bits are kept exactly.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { addCostColumns, groupedCosts } from '../../src/pricing/aggregate.js';
import { groupCosts } from '../support/cost-groups.js';
import type { CostDimension, CostGroups } from '../../src/pricing/aggregate.js';
import { BigColumn, KeyTable, keyFilter, selectRows } from '../../src/pricing/columns.js';
import { priceColumns, priceMonth, rowsOf } from '../../src/pricing/engine.js';
import type { CostRow } from '../../src/pricing/engine.js';
import type { AccountMonth, KeyHour } from '../../src/pricing/quantities.js';
import { accountMonthArb, accountMonthWithRunsArb } from './generate.js';
import { referenceCosts } from './reference.js';

const byId = (rows: CostRow[]) => new Map(rows.map((r) => [`${r.charge}|${r.hour}|${r.key === null ? 'unallocated' : JSON.stringify(r.key)}`, r.cost]));
const texts = (rows: Iterable<CostRow>) => [...rows].flatMap((r) => [...rowsOf(r)]).map((r) => JSON.stringify(r)).sort();

/** The input's requests and egress as usage columns, the rest of each quantity left as an object. */
function asColumns(input: AccountMonth) {
  const keys = new KeyTable();
  const usage = { length: 0, hour: new Float64Array(input.quantities.length), key: new Int32Array(input.quantities.length), requests: new Float64Array(input.quantities.length), egress: new BigColumn() };
  const rest: KeyHour[] = [];
  for (const q of input.quantities) {
    const { requests, egressBytes, ...other } = q;
    if ((requests ?? 0) !== 0 || (egressBytes ?? 0n) !== 0n) {
      const i = usage.length++;
      usage.hour[i] = q.hour;
      usage.key[i] = keys.of(q.key);
      usage.requests[i] = requests ?? 0;
      usage.egress.set(i, egressBytes ?? 0n);
    }
    rest.push(other);
  }
  return { ...input, keys, usage, quantities: rest };
}

const MONTH_START = (month: string) => Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)) - 1, 1) / 1000;
const DIMS: CostDimension[] = ['customerId', 'featureId', 'clientType', 'clientId', 'bucket', 'action', 'provider'];
const FILTER_VALUES: Record<string, string[]> = {
  customerId: ['acme', 'globex', '', 'nobody'],
  featureId: ['upload', ''],
  clientId: ['c1', 'c2'],
  bucket: ['media', 'archive'],
  action: ['GetObject', 'PutObject', 'UploadPart'],
};

/** A request over the month: a range of whole hours, windows cut at generated hours, filters. */
const requestArb = fc.record({
  from: fc.nat(31 * 24),
  length: fc.integer({ min: 1, max: 31 * 24 }),
  cuts: fc.uniqueArray(fc.integer({ min: 1, max: 31 * 24 - 1 }), { maxLength: 40 }),
  groupBy: fc.subarray(DIMS),
  filters: fc.dictionary(fc.constantFrom(...Object.keys(FILTER_VALUES)), fc.constant(null)).chain((chosen) =>
    fc.record(Object.fromEntries(Object.keys(chosen).map((d) => [d, fc.subarray(FILTER_VALUES[d]!, { minLength: 1 })]))),
  ),
});

/** The hand-made reference of a cut: each hour of each row, in the range, its key passing the filters ('' is none; no key passes none). */
function cutByHand(rows: readonly CostRow[], from: number, to: number, filters: Record<string, string[]>): CostRow[] {
  return rows
    .flatMap((r) => [...rowsOf(r)])
    .filter((r) => r.hour >= from && r.hour < to)
    .filter((r) => Object.entries(filters).every(([d, values]) => r.key !== null && values.some((v) => (v === '' ? r.key![d as 'bucket'] === null : r.key![d as 'bucket'] === v))));
}

describe('pricing in columns', () => {
  it('requests and egress given as columns price to the rows of the same quantities as objects, and agree with the reference', () => {
    fc.assert(
      fc.property(accountMonthWithRunsArb, (input) => {
        const columns = [...priceColumns(asColumns(input)).objects()];
        assert.deepEqual(texts(columns), texts(priceMonth(input)));
        const hourly = columns.flatMap((r) => [...rowsOf(r)]);
        assert.deepEqual(byId(hourly), byId(priceMonth(input).flatMap((r) => [...rowsOf(r)])));
      }),
      { numRuns: 150 },
    );
    fc.assert(
      fc.property(accountMonthArb, (input) => {
        assert.deepEqual(byId([...priceColumns(asColumns(input)).objects()]), referenceCosts(input));
      }),
      { numRuns: 150 },
    );
  });

  it('groups from columns equal the rows as objects cut, filtered and grouped, for any range, windows, groupBy and filters', () => {
    fc.assert(
      fc.property(accountMonthWithRunsArb, requestArb, (input, q) => {
        const start = MONTH_START(input.month);
        const from = start + q.from * 3600;
        const to = from + q.length * 3600;
        const bounds = [from, ...q.cuts.map((c) => start + c * 3600).filter((b) => b > from && b < to), to].sort((a, b) => a - b);
        const windowOf = (hour: number) => {
          let w = 0;
          while (bounds[w + 1]! <= hour) w++;
          return w;
        };
        const priced = priceColumns({ ...input, keys: new KeyTable() });
        const groups: CostGroups = new Map();
        addCostColumns(groups, 'aws', priced, { from, to, filter: keyFilter(priced.keys.labels, q.filters) }, q.groupBy, windowOf, bounds.slice(0, -1), bounds.slice(1));
        const endOf = (start: number) => bounds[bounds.indexOf(start) + 1]!;
        const expected = groupCosts(cutByHand([...priced.objects()], from, to, q.filters), q.groupBy, (hour) => bounds[windowOf(hour)]!, 'aws', endOf);
        assert.deepEqual(groupedCosts(groups, endOf), expected);
      }),
      { numRuns: 300 },
    );
  });

  it('the rows selected for an export are each hour of the rows in the range that pass the filters', () => {
    fc.assert(
      fc.property(accountMonthWithRunsArb, requestArb, (input, q) => {
        const start = MONTH_START(input.month);
        const from = start + q.from * 3600;
        const to = from + q.length * 3600;
        const priced = priceColumns({ ...input, keys: new KeyTable() });
        const selected = selectRows(priced, from, to, keyFilter(priced.keys.labels, q.filters));
        assert.deepEqual(texts(selected.objects()), texts(cutByHand([...priced.objects()], from, to, q.filters)));
      }),
      { numRuns: 200 },
    );
  });

  it('keeps integers of any size exactly, 64-bit ones in the array', () => {
    const column = new BigColumn();
    const values = [0n, 1n, -1n, 2n ** 63n - 1n, -(2n ** 63n) + 1n, -(2n ** 63n), 2n ** 63n, 10n ** 30n, -(10n ** 40n), 42n];
    values.forEach((v, i) => {
      column.set(i, v);
    });
    assert.deepEqual(values.map((_, i) => column.get(i)), values);
    assert.equal(column.outside.size, 4, 'only the values past 64 bits (and the marker itself) beside the array');
  });
});
