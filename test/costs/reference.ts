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
import type { StorageInterval, StorageKey } from '../../src/store/types.js';
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

const monthOf = (t: number) => new Date(t * 1000).toISOString().slice(0, 7);
const monthStart = (month: string) => Date.parse(`${month}-01T00:00:00Z`) / 1000;
const monthEnd = (month: string) => {
  const d = new Date(monthStart(month) * 1000);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) / 1000;
};

/**
 * Every fine cost of `months` (default: those the events fall in) for a tenant's events and, when
 * given, its inventory's intervals (versions, parts, markers). An account (provider, plan) is in a
 * month when it has events in it or bytes live at its start.
 */
export function referenceFine(events: RefEvent[], book: PriceBook, plans: BucketPlans, intervals: StorageInterval[] = [], months?: string[]): RefCost[] {
  type Q = KeyHour & { requests?: number; egressBytes?: bigint };
  const accounts = new Map<string, { provider: string; planId: string | undefined; month: string; q: Map<string, Q>; intervals: StorageInterval[] }>();
  const wanted = new Set(months ?? events.map((e) => monthOf(e.timestamp)));
  const account = (provider: string, bucket: string | null, month: string) => {
    const planId = planIdFor(book, plans, provider, bucket);
    const id = `${provider}|${planId}|${month}`;
    if (!accounts.has(id)) accounts.set(id, { provider, planId, month, q: new Map(), intervals: [] });
    return accounts.get(id)!;
  };
  const cell = (a: { q: Map<string, Q> }, hour: number, key: Attribution): Q => {
    const kid = `${hour}|${JSON.stringify(key)}`;
    if (!a.q.has(kid)) a.q.set(kid, { hour, key });
    return a.q.get(kid)!;
  };
  for (const e of events) {
    if (!wanted.has(monthOf(e.timestamp))) continue;
    const a = account(e.dims.provider!, e.dims.bucket, monthOf(e.timestamp));
    const hour = e.timestamp - (e.timestamp % 3600);
    const q = cell(a, hour, { customerId: e.dims.customerId, featureId: e.dims.featureId, clientType: e.dims.clientType, clientId: e.dims.clientId, bucket: e.dims.bucket, action: e.dims.action as Attribution['action'] });
    q.requests = (q.requests ?? 0) + 1;
    if (e.measures[2]! !== 0n) q.egressBytes = (q.egressBytes ?? 0n) + e.measures[2]!;
  }
  for (const month of wanted) {
    const S = monthStart(month);
    for (const v of intervals) if (v.size !== null && v.size > 0n && v.start < S && (v.end === null || v.end >= S)) account(v.key.provider!, v.key.bucket, month);
  }
  for (const a of accounts.values()) {
    const S = monthStart(a.month);
    const E = monthEnd(a.month);
    const mine = intervals.filter((v) => v.key.provider === a.provider && planIdFor(book, plans, v.key.provider, v.key.bucket) === a.planId && v.start < E && (v.end === null || v.end >= S - 1));
    const versions = a.planId === undefined ? [] : book.plans.get(a.planId)!;
    const inForce = (t: number) => [...versions].reverse().find((v) => v.validFrom === undefined || Date.parse(`${v.validFrom}T00:00:00Z`) / 1000 <= t);
    const storage = referenceStorage(mine, S, E, (t) => BigInt(inForce(t)?.storage.minimumObjectBytes ?? 0), (t) => (inForce(t)?.storage.minimumDays ?? 0) * 86400);
    for (const { hour, key, ...fields } of storage.values()) Object.assign(cell(a, hour, { customerId: key.customerId, featureId: key.featureId, clientType: key.clientType, clientId: key.clientId, bucket: key.bucket, action: key.action }), fields);
    (a as { peaks?: Map<number, bigint> }).peaks = versions[0]?.storage.metering === 'daily-peak' ? referencePeaks(mine, S, E) : undefined;
  }
  const out: RefCost[] = [];
  for (const a of accounts.values()) {
    if (a.planId === undefined) {
      // Unpriced: usage kept, a zero-cost row per key and hour that has requests, egress or byte-seconds.
      for (const q of a.q.values()) {
        if ((q.requests ?? 0) > 0 || (q.egressBytes ?? 0n) > 0n || (q.byteSeconds ?? 0n) > 0n) out.push({ hour: q.hour, provider: a.provider, planId: null, currency: null, key: q.key, column: null, units: 0n });
      }
      continue;
    }
    const versions = book.plans.get(a.planId)!;
    const peaks = (a as { peaks?: Map<number, bigint> }).peaks;
    const costs = referenceCosts({ month: a.month, versions, quantities: [...a.q.values()], ...(peaks === undefined ? {} : { dailyPeakBytes: peaks }) });
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

const overlap = (v: StorageInterval, from: number, to: number) => Math.max(0, Math.min(v.end ?? Number.POSITIVE_INFINITY, to) - Math.max(v.start, from));
/** "Live at a midnight" as the feed defines it: the bytes open at it, so started before and not ended before. */
const openAt = (v: StorageInterval, t: number) => v.start < t && (v.end === null || v.end >= t);

export type RefStorageHour = { hour: number; key: StorageKey } & Partial<Record<'byteSeconds' | 'snapshotBytes' | 'smallObjectSeconds' | 'smallObjectByteSeconds' | 'snapshotSmallObjects' | 'snapshotSmallObjectBytes' | 'earlyDeleteByteSeconds', bigint>>;

/**
 * Storage quantities per key × hour of [S, E), interval by interval and hour by hour: byte-seconds
 * by overlap, snapshots at midnights, objects below `minimumBytes(hour)`, versions ended younger
 * than `minimumSeconds(hour)` (billed for the rest at their padded size).
 */
export function referenceStorage(intervals: StorageInterval[], S: number, E: number, minimumBytes: (t: number) => bigint, minimumSeconds: (t: number) => number): Map<string, RefStorageHour> {
  const out = new Map<string, RefStorageHour>();
  const add = (hour: number, key: StorageKey, field: Exclude<keyof RefStorageHour, 'hour' | 'key'>, value: bigint) => {
    if (value === 0n) return;
    const id = `${hour}|${JSON.stringify(key)}`;
    const row = out.get(id) ?? { hour, key };
    row[field] = (row[field] ?? 0n) + value;
    out.set(id, row);
  };
  for (let hour = S; hour < E; hour += 3600) {
    for (const v of intervals) {
      if (v.size === null) continue;
      const seconds = BigInt(overlap(v, hour, hour + 3600));
      add(hour, v.key, 'byteSeconds', v.size * seconds);
      if (hour % 86400 === 0 && openAt(v, hour)) add(hour, v.key, 'snapshotBytes', v.size);
      if (v.kind !== 'version') continue;
      if (v.size < minimumBytes(hour)) {
        add(hour, v.key, 'smallObjectSeconds', seconds);
        add(hour, v.key, 'smallObjectByteSeconds', v.size * seconds);
        if (hour % 86400 === 0 && openAt(v, hour)) {
          add(hour, v.key, 'snapshotSmallObjects', 1n);
          add(hour, v.key, 'snapshotSmallObjectBytes', v.size);
        }
      }
      if (v.end !== null && v.end >= hour && v.end < hour + 3600 && v.end - v.start < minimumSeconds(hour)) {
        // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
        const padded = v.size < minimumBytes(hour) ? minimumBytes(hour) : v.size;
        add(hour, v.key, 'earlyDeleteByteSeconds', padded * BigInt(v.start + minimumSeconds(hour) - v.end));
      }
    }
  }
  return out;
}

/** The largest live bytes (started at or before, ended after) at any instant of each day of [S, E). */
export function referencePeaks(intervals: StorageInterval[], S: number, E: number): Map<number, bigint> {
  const out = new Map<number, bigint>();
  const live = (t: number) => intervals.reduce((s, v) => (v.size !== null && v.start <= t && (v.end === null || v.end > t) ? s + v.size : s), 0n);
  for (let day = S; day < E; day += 86400) {
    const instants = [day, ...intervals.flatMap((v) => [v.start, v.end ?? day]).filter((t) => t >= day && t < day + 86400)];
    const peak = instants.reduce((m, t) => (live(t) > m ? live(t) : m), 0n);
    if (peak > 0n) out.set(day, peak);
  }
  return out;
}

