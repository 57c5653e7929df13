/**
 * The cost reference: from the events as sent (test/usage/reference.ts decides which count), each
 * provider account's month of quantities built here one event at a time, priced by the independent
 * pricing reference (test/pricing/reference.ts: exact fractions, requests one by one), then cut to
 * the query's windows (labels found with Intl, as the usage reference does) and filters, and summed
 * in integer units. Nothing of src/costs or the stores is used.
 */
import { planIdFor } from '../../src/pricing/assignment.js';
import type { BucketPlans } from '../../src/pricing/assignment.js';
import type { PriceBook } from '../../src/pricing/catalogue.js';
import type { Attribution, KeyHour } from '../../src/pricing/quantities.js';
import { referenceCosts } from '../pricing/reference.js';
import type { Dim, RefEvent, RefQuery } from '../usage/reference.js';
import { windowLabel } from '../usage/reference.js';

export interface RefCost {
  hour: number;
  provider: string;
  planId: string | null;
  currency: string | null;
  /** null: unallocated. */
  key: Attribution | null;
  column: 'storageCost' | 'requestCost' | 'egressCost' | 'otherCost' | null;
  /** Units of 10^-10. */
  units: bigint;
}

const COLUMN: Record<string, RefCost['column']> = { storage: 'storageCost', 'storage-round-up': 'storageCost', egress: 'egressCost', 'early-delete': 'otherCost', 'monthly-minimum': 'otherCost', 'monthly-fee': 'otherCost' };

const units = (text: string) => BigInt(text.replace('.', ''));

/** Every fine cost of the months the events fall in, for a tenant's events. */
export function referenceFine(events: RefEvent[], book: PriceBook, plans: BucketPlans): RefCost[] {
  const accounts = new Map<string, { provider: string; planId: string | undefined; month: string; q: Map<string, KeyHour & { requests: number; egressBytes: bigint }> }>();
  for (const e of events) {
    const provider = e.dims.provider!;
    const planId = planIdFor(book, plans, provider, e.dims.bucket);
    const month = new Date(e.timestamp * 1000).toISOString().slice(0, 7);
    const id = `${provider}|${planId}|${month}`;
    if (!accounts.has(id)) accounts.set(id, { provider, planId, month, q: new Map() });
    const hour = e.timestamp - (e.timestamp % 3600);
    const key: Attribution = { customerId: e.dims.customerId, featureId: e.dims.featureId, clientType: e.dims.clientType, clientId: e.dims.clientId, bucket: e.dims.bucket, action: e.dims.action as Attribution['action'] };
    const kid = `${hour}|${JSON.stringify(key)}`;
    const q = accounts.get(id)!.q;
    const row = q.get(kid) ?? { hour, key, requests: 0, egressBytes: 0n };
    q.set(kid, { ...row, requests: row.requests + 1, egressBytes: row.egressBytes + e.measures[2]! });
  }
  const out: RefCost[] = [];
  for (const a of accounts.values()) {
    if (a.planId === undefined) {
      // Unpriced: usage kept, a zero-cost row per key and hour.
      for (const q of a.q.values()) out.push({ hour: q.hour, provider: a.provider, planId: null, currency: null, key: q.key, column: null, units: 0n });
      continue;
    }
    const versions = book.plans.get(a.planId)!;
    const costs = referenceCosts({ month: a.month, versions, quantities: [...a.q.values()] });
    for (const [id, cost] of costs) {
      const [charge, hour, keyText] = id.split('|') as [string, string, string];
      const column = charge.startsWith('request:') ? 'requestCost' : COLUMN[charge];
      if (column === undefined) throw new Error(`reference: unknown charge ${charge}`);
      out.push({ hour: Number(hour), provider: a.provider, planId: a.planId, currency: versions[0]!.currency, key: keyText === 'unallocated' ? null : JSON.parse(keyText), column, units: units(cost) });
    }
  }
  return out;
}

export interface RefRow {
  storageCost: bigint;
  requestCost: bigint;
  egressCost: bigint;
  otherCost: bigint;
  totalCost: bigint;
}

/** label|values|planId|currency|unallocated|unpriced → sums, as the API's rows should be. */
export function referenceRows(fine: RefCost[], q: RefQuery): Map<string, RefRow> {
  const byPlan = q.groupBy.includes('provider') || q.groupBy.includes('bucket');
  const value = (c: RefCost, d: Dim): string | null | undefined => (d === 'provider' ? c.provider : c.key === null ? undefined : c.key[d]);
  const out = new Map<string, RefRow>();
  for (const c of fine) {
    if (c.hour < q.from || c.hour >= q.to) continue;
    const passes = Object.entries(q.filters).every(([d, values]) => {
      const v = value(c, d as Dim);
      return v !== undefined && values!.some((f) => (f === '' ? v === null : v === f));
    });
    if (!passes) continue;
    const id = [windowLabel(q.granularity, q.timeZone, c.hour), JSON.stringify(q.groupBy.map((d) => value(c, d) ?? null)), byPlan ? c.planId : null, c.currency, c.key === null, c.planId === null].join('|');
    const row = out.get(id) ?? { storageCost: 0n, requestCost: 0n, egressCost: 0n, otherCost: 0n, totalCost: 0n };
    if (c.column !== null) row[c.column] += c.units;
    row.totalCost += c.units;
    out.set(id, row);
  }
  return out;
}
