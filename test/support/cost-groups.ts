/**
 * The tests' grouping of fine cost rows as objects (the engine's `priceMonth`), one hour of a run at a
 * time: what the service's grouping from columns (addCostColumns) is compared with.
 */
import { CATEGORY_COLUMN, groupedCosts } from '../../src/pricing/aggregate.js';
import type { CostDimension, CostGroups, GroupedCost, ProviderCostRow } from '../../src/pricing/aggregate.js';
import { costUnits } from '../../src/pricing/money.js';

/**
 * Groups fine rows by window (windowOf maps an hour to its window's start), dimensions, currency and,
 * when the groupBy holds provider or bucket, plan. `provider`: the provider of rows that carry none;
 * `endOf`: a window's end from its start (where a test compares it).
 */
export function groupCosts(rows: readonly ProviderCostRow[], groupBy: readonly CostDimension[], windowOf: (hour: number) => number, provider = '', endOf = (start: number) => start): (GroupedCost & { end: number })[] {
  const groups: CostGroups = new Map();
  const byPlan = groupBy.includes('provider') || groupBy.includes('bucket');
  for (const r of rows) {
    const values = groupBy.map((d) => (d === 'provider' ? (r.provider ?? provider) : (r.key?.[d] ?? null)));
    const planId = byPlan ? r.planId : null;
    const unallocated = r.key === null;
    const unpriced = r.category === 'unpriced';
    const rest = `\u0000${values.map((v) => (v === null ? '\u0001' : v)).join('\u0000')}\u0000${planId}\u0000${r.currency}\u0000${unallocated}\u0000${unpriced}`;
    const column = CATEGORY_COLUMN[r.category];
    const units = costUnits(r.cost);
    for (let k = 0; k < (r.repeat?.times ?? 1); k++) {
      const start = windowOf(r.hour + k * (r.repeat?.every ?? 3600));
      let group = groups.get(start + rest);
      if (group === undefined) {
        const dimensions = Object.fromEntries(groupBy.map((d, i) => [d, values[i]!]));
        group = { g: { start, dimensions, planId, currency: r.currency, unallocated, unpriced }, sums: { storageCost: 0n, requestCost: 0n, egressCost: 0n, otherCost: 0n, totalCost: 0n } };
        groups.set(start + rest, group);
      }
      if (column !== undefined) group.sums[column] += units;
      group.sums.totalCost += units;
    }
  }
  return groupedCosts(groups, endOf);
}
