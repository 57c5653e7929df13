/**
 * Coarser cost rows are sums of the fine rows (attribution key × hour): exact decimal sums of
 * amounts already rounded once, so any grouping adds up to the ungrouped total to the last digit.
 */
import type { Attribution } from './quantities.js';
import type { CostRow } from './engine.js';
import { COST_PLACES, unitsText } from './money.js';
import { ACTION_NAMES } from '../events/catalogue.js';
import type { KeyDimension, KeyFilter, PricedRows } from './columns.js';
import { KEY_DIMENSIONS, NO_KEY, clipAt, keyPasses } from './columns.js';

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
  /** The plan, when the groupBy holds provider or bucket (a provider's buckets may have several); else null. */
  readonly planId: string | null;
  /** Amounts of different currencies are never added: null for unpriced rows. */
  readonly currency: string | null;
  readonly unallocated: boolean;
  readonly unpriced: boolean;
}

/** A fine row of one provider account (the engine prices one at a time and knows no provider). */
export type ProviderCostRow = CostRow & { readonly provider?: string };

/** Groups being summed (integer units), by window, dimensions, plan, currency and flags. */
export type CostGroups = Map<string, { readonly g: Omit<GroupedCost, keyof CostTotals>; readonly sums: Record<keyof CostTotals, bigint> }>;

/** Adds the sums of `from` into `into` (exact: integer units); `from` is left as it was. */
export function mergeCosts(into: CostGroups, from: CostGroups): void {
  for (const [id, { g, sums }] of from) {
    const group = into.get(id);
    if (group === undefined) into.set(id, { g, sums: { ...sums } });
    else for (const c of Object.keys(sums) as (keyof CostTotals)[]) group.sums[c] += sums[c];
  }
}

/** The groups as rows, in answer order; `endOf`: a window's end from its start (written in each row once, not per page). */
export function groupedCosts(groups: CostGroups, endOf: (start: number) => number): (GroupedCost & { readonly end: number })[] {
  const rows = [...groups.values()].map(({ g, sums }) => ({
    ...g,
    end: endOf(g.start),
    storageCost: unitsText(sums.storageCost, COST_PLACES),
    requestCost: unitsText(sums.requestCost, COST_PLACES),
    egressCost: unitsText(sums.egressCost, COST_PLACES),
    otherCost: unitsText(sums.otherCost, COST_PLACES),
    totalCost: unitsText(sums.totalCost, COST_PLACES),
  }));
  // The dimensions' names once, not per comparison (every group has the same).
  const dims = rows.length === 0 ? [] : Object.keys(rows[0]!.dimensions);
  return rows.sort((a, b) => compareGroups(a, b, dims));
}

const compareText = (a: string | null, b: string | null): number => (a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1);

/** By start, then each dimension (none first, then by code point), plan, currency; unallocated after keys, unpriced last. */
export function compareGroups(a: Omit<GroupedCost, keyof CostTotals>, b: Omit<GroupedCost, keyof CostTotals>, dims: readonly string[] = Object.keys(a.dimensions)): number {
  if (a.start !== b.start) return a.start - b.start;
  for (const d of dims) {
    const c = compareText(a.dimensions[d]!, b.dimensions[d]!);
    if (c !== 0) return c;
  }
  return compareText(a.planId, b.planId) || compareText(a.currency, b.currency) || Number(a.unallocated) - Number(b.unallocated) || Number(a.unpriced) - Number(b.unpriced);
}

/** The total each category of fine row adds to, besides totalCost (unpriced: none). */
export const CATEGORY_COLUMN: Record<CostRow['category'], keyof CostTotals | undefined> = {
  storage: 'storageCost',
  request: 'requestCost',
  egress: 'egressCost',
  other: 'otherCost',
  unpriced: undefined,
};

/** The exact sums of a group being built from columns, by CATEGORY_COLUMN then the total. */
type Sums = [bigint, bigint, bigint, bigint, bigint];
const SUM_COLUMNS: readonly (keyof CostTotals)[] = ['storageCost', 'requestCost', 'egressCost', 'otherCost', 'totalCost'];

/**
 * Groups one account's fine rows (PricedRows) without a row object, by window, dimensions, currency
 * and, when the groupBy holds provider or bucket, plan: the rows in [from, to) whose key passes
 * `filter`, runs cut to the range (a run adds its cost once per hour it stands for), added into
 * `groups`, whose ids are the same for every month, so months merge. `windowOf(hour)`: the index of an hour's window (unix seconds), `starts`
 * and `ends` each window's bounds in seconds. Groups are found by a number per row (the key's
 * grouped values, the window, the line's plan, currency and kind), their text ids made once per group.
 * False, with `groups` part way, once the rows would make more than `most` groups: a run adds a group
 * to every window it stands in, so the groups of a fine granularity can far outnumber the rows priced.
 */
export function addCostColumns(
  groups: CostGroups,
  provider: string,
  rows: PricedRows,
  range: { from: number; to: number; filter: KeyFilter },
  groupBy: readonly CostDimension[],
  windowOf: (hour: number) => number,
  starts: ArrayLike<number>,
  ends: ArrayLike<number>,
  most = Number.POSITIVE_INFINITY,
): boolean {
  const byPlan = groupBy.includes('provider') || groupBy.includes('bucket');
  const keys = rows.keys;
  const names = keys.labels.names;
  // Each line's group part: its plan (when grouped by), currency and whether unpriced.
  const lineParts = new Map<string, number>();
  const lineGroup = rows.lines.map((line) => {
    const id = `${byPlan ? line.plan?.id : null}\u0000${line.plan?.currency ?? null}\u0000${line.category === 'unpriced'}`;
    let g = lineParts.get(id);
    if (g === undefined) {
      g = lineParts.size;
      lineParts.set(id, g);
    }
    return g;
  });
  const lineColumn = rows.lines.map((line) => SUM_COLUMNS.indexOf(CATEGORY_COLUMN[line.category] ?? 'totalCost'));
  // Each key's grouped values as one number (a tuple id); NO_KEY's is 0.
  const keyed = groupBy.filter((d) => d !== 'provider');
  const codeOf = (d: CostDimension, key: number): number => (d === 'action' ? keys.action[key]! + 1 : keys.dims[KEY_DIMENSIONS.indexOf(d as KeyDimension)]![key]! + 1);
  const tupleOfKey = new Int32Array(keys.length).fill(-1);
  const tupleIds = new Map<string, number>();
  const tupleKeys: number[] = [NO_KEY];
  const tupleOf = (key: number): number => {
    if (key === NO_KEY) return 0;
    let t = tupleOfKey[key]!;
    if (t >= 0) return t;
    const id = keyed.map((d) => codeOf(d, key)).join(',');
    t = tupleIds.get(id) ?? -1;
    if (t < 0) {
      t = tupleKeys.length;
      tupleKeys.push(key);
      tupleIds.set(id, t);
    }
    tupleOfKey[key] = t;
    return t;
  };
  const lineCount = Math.max(1, lineParts.size);
  // Groups by part (tuple, line part, unallocated: a small integer), then by window; each part's
  // last window found again without a lookup, as rows come in hour order.
  type Group = { tuple: number; w: number; line: number; sums: Sums };
  const parts = new Map<number, { last: Group; byWindow: Map<number, Group> }>();
  const found: Group[] = [];
  const { from, to, filter } = range;
  const one = { hour: 0, slot: 0, times: 1 };
  for (let i = 0; i < rows.length; i++) {
    const key = rows.key[i]!;
    if ((filter.keyed || key === NO_KEY) && !keyPasses(filter, keys, key)) continue;
    // A single hour (most rows) without clipAt's object.
    let part: { hour: number; times: number } | undefined = one;
    if (rows.times[i] === 1) {
      one.hour = rows.hour[i]! * 3600;
      if (one.hour < from || one.hour >= to) continue;
    } else {
      part = clipAt(rows, i, from, to);
      if (part === undefined) continue;
    }
    const tuple = tupleOf(key);
    const line = rows.line[i]!;
    const column = lineColumn[line]!;
    const units = rows.cost.get(i);
    const every = rows.every(i);
    const id = (tuple * lineCount + lineGroup[line]!) * 2 + (key === NO_KEY ? 1 : 0);
    let groups = parts.get(id);
    for (let k = 0; k < part.times; ) {
      const hour = part.hour + k * every;
      const w = windowOf(hour);
      // The run's hours in this window: up to its end.
      const n = Math.min(part.times - k, Math.ceil((ends[w]! - hour) / every));
      k += n;
      let group = groups?.last.w === w ? groups.last : groups?.byWindow.get(w);
      if (group === undefined) {
        // This account's groups are distinct answer rows: more of them than `most` is past the bound already.
        if (found.length >= most) return false;
        group = { tuple, w, line, sums: [0n, 0n, 0n, 0n, 0n] };
        found.push(group);
        if (groups === undefined) {
          groups = { last: group, byWindow: new Map() };
          parts.set(id, groups);
        }
        groups.byWindow.set(w, group);
      }
      groups!.last = group;
      const amount = n === 1 ? units : units * BigInt(n);
      if (column !== 4) group.sums[column]! += amount;
      group.sums[4] += amount;
    }
  }
  for (const { tuple, w, line, sums } of found) {
    const key = tupleKeys[tuple]!;
    const plan = rows.lines[line]!.plan;
    const values = groupBy.map((d) => (d === 'provider' ? provider : key === NO_KEY ? null : d === 'action' ? ACTION_NAMES[keys.action[key]!]! : names[keys.dims[KEY_DIMENSIONS.indexOf(d as KeyDimension)]![key]!]!));
    const planId = byPlan ? (plan?.id ?? null) : null;
    const currency = plan?.currency ?? null;
    const unallocated = key === NO_KEY;
    const unpriced = rows.lines[line]!.category === 'unpriced';
    const start = starts[w]!;
    const id = `${start}\u0000${values.map((v) => (v === null ? '\u0001' : v)).join('\u0000')}\u0000${planId}\u0000${currency}\u0000${unallocated}\u0000${unpriced}`;
    let group = groups.get(id);
    if (group === undefined) {
      if (groups.size >= most) return false;
      const dimensions = Object.fromEntries(groupBy.map((d, i) => [d, values[i]!]));
      group = { g: { start, dimensions, planId, currency, unallocated, unpriced }, sums: { storageCost: 0n, requestCost: 0n, egressCost: 0n, otherCost: 0n, totalCost: 0n } };
      groups.set(id, group);
    }
    SUM_COLUMNS.forEach((c, k) => {
      group.sums[c] += sums[k]!;
    });
  }
  return true;
}
