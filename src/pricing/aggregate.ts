/**
 * Coarser cost rows are sums of the fine rows (attribution key × hour): exact decimal sums of
 * amounts already rounded once, so any grouping adds up to the ungrouped total to the last digit.
 */
import type { Attribution } from './quantities.js';
import type { CostRow } from './engine.js';
import { COST_PLACES, costUnits, unitsText } from './money.js';

export type CostDimension = keyof Attribution | 'provider';

export interface CostTotals {
  readonly storageCost: string;
  readonly requestCost: string;
  readonly egressCost: string;
  /** Minimum durations, monthly minimums, monthly fees. */
  readonly otherCost: string;
  readonly totalCost: string;
}

export interface GroupedCost extends CostTotals {
  readonly start: number;
  /** One value per groupBy dimension; unallocated rows carry null and `unallocated: true`. */
  readonly dimensions: Readonly<Record<string, string | null>>;
  readonly unallocated: boolean;
  readonly unpriced: boolean;
}

/**
 * Groups fine rows by window (windowOf maps an hour to its window's start) and dimensions. The
 * provider is not part of an Attribution: the caller prices one provider account at a time and
 * passes it here.
 */
export function groupCosts(rows: readonly CostRow[], groupBy: readonly CostDimension[], windowOf: (hour: number) => number, provider = ''): GroupedCost[] {
  const groups = new Map<string, { start: number; dimensions: Record<string, string | null>; unallocated: boolean; unpriced: boolean; sums: Record<keyof CostTotals, bigint> }>();
  for (const r of rows) {
    const start = windowOf(r.hour);
    const dimensions = Object.fromEntries(groupBy.map((d) => [d, d === 'provider' ? provider : (r.key?.[d] ?? null)]));
    const unallocated = r.key === null;
    const unpriced = r.category === 'unpriced';
    const id = JSON.stringify([start, dimensions, unallocated, unpriced]);
    let g = groups.get(id);
    if (g === undefined) {
      g = { start, dimensions, unallocated, unpriced, sums: { storageCost: 0n, requestCost: 0n, egressCost: 0n, otherCost: 0n, totalCost: 0n } };
      groups.set(id, g);
    }
    const column = CATEGORY_COLUMN[r.category];
    const units = costUnits(r.cost);
    if (column !== undefined) g.sums[column] += units;
    g.sums.totalCost += units;
  }
  return [...groups.values()]
    .map(({ sums, ...g }) => ({
      ...g,
      storageCost: unitsText(sums.storageCost, COST_PLACES),
      requestCost: unitsText(sums.requestCost, COST_PLACES),
      egressCost: unitsText(sums.egressCost, COST_PLACES),
      otherCost: unitsText(sums.otherCost, COST_PLACES),
      totalCost: unitsText(sums.totalCost, COST_PLACES),
    }))
    .sort((a, b) => a.start - b.start || JSON.stringify(a.dimensions).localeCompare(JSON.stringify(b.dimensions)) || Number(a.unallocated) - Number(b.unallocated));
}

const CATEGORY_COLUMN: Record<CostRow['category'], keyof CostTotals | undefined> = {
  storage: 'storageCost',
  request: 'requestCost',
  egress: 'egressCost',
  other: 'otherCost',
  unpriced: undefined,
};
