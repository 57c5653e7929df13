/**
 * The pricing engine: pure code from one account-month of quantities (quantities.ts) to cost rows
 * at the finest grain, attribution key × hour × charge. Rules (README "Cost"):
 * - tiers, free allowances and minimums belong to the account; each line (storage, a request
 *   class, egress) consumes them in time order through a Meter;
 * - an hour's (a day's, for daily metering) amount is shared out to the keys in proportion to their
 *   quantity in it, each share rounded once, half-even, to COST_PLACES; every coarser figure is
 *   the sum of these rows, so sums add up to the last digit by construction;
 * - a monthly minimum above use and rounding up to whole units are billed as `unallocated` rows
 *   (key null) in the month's last hour; so is a flat monthly fee;
 * - each hour is priced by the plan version in force then; hours before the first version are
 *   `unpriced`.
 */
import type { Band } from './bands.js';
import { Meter, bandsOf, freeAllowance } from './bands.js';
import { versionAt } from './catalogue.js';
import type { Dec } from './money.js';
import { COST_PLACES, ZERO, dec, priceUnits, quantityText, shareUnits, unitsText } from './money.js';
import type { PricePlan } from './plan.js';
import type { AccountMonth, Attribution, KeyHour } from './quantities.js';

export type CostCategory = 'storage' | 'request' | 'egress' | 'other' | 'unpriced';

export interface CostRow {
  /** Unix seconds of the hour's start. */
  readonly hour: number;
  /** Start of the hour (or UTC day, for daily metering) whose account-level charge this row splits. */
  readonly slot: number;
  /** null: an account-level amount no key used (`unallocated`). */
  readonly key: Attribution | null;
  readonly category: CostCategory;
  /** storage | early-delete | request:<class> | egress | monthly-minimum | storage-round-up | request:<class>:round-up | monthly-fee | unpriced */
  readonly charge: string;
  readonly planId: string | null;
  readonly validFrom: string | null;
  readonly currency: string | null;
  readonly consumedQuantity: string;
  readonly consumedUnit: string;
  readonly pricingQuantity: string;
  readonly pricingUnit: string;
  /** COST_PLACES decimal places, half-even. */
  readonly cost: string;
}

const HOUR = 3600;
const DAY = 86400;

interface Share {
  readonly hour: number;
  readonly key: Attribution;
  /** The key's weight in the slot (its quantity, or its byte-seconds for a daily peak). */
  readonly weight: bigint;
}

interface Line {
  readonly category: CostCategory;
  readonly charge: string;
  readonly consumedUnit: string;
  /** Base units per consumed unit (e.g. 24 byte-hours per byte-day). */
  readonly consumedScale: bigint;
  readonly pricingUnit: string;
  /** Base units per pricing unit. */
  readonly denominator: bigint;
}

export function monthBounds(month: string): { start: number; end: number } {
  const m = /^(\d{4})-(\d{2})$/.exec(month);
  if (m === null) throw new RangeError(`month must be YYYY-MM, got "${month}"`);
  const start = Date.UTC(Number(m[1]), Number(m[2]) - 1, 1) / 1000;
  return { start, end: Date.UTC(Number(m[1]), Number(m[2]), 1) / 1000 };
}

export function priceMonth(input: AccountMonth): CostRow[] {
  const { start, end } = monthBounds(input.month);
  const first = input.versions[0];
  if (first === undefined) throw new RangeError('priceMonth needs at least one plan version');
  const hoursPerMonth = BigInt(first.storage.hoursPerMonth === 'calendar' ? (end - start) / HOUR : first.storage.hoursPerMonth);
  const lastHour = end - HOUR;
  const rows: CostRow[] = [];
  const byHour = new Map<number, KeyHour[]>();
  for (const q of input.quantities) {
    if (q.hour < start || q.hour >= end || q.hour % HOUR !== 0) throw new RangeError(`quantity hour ${q.hour} is not a whole hour of ${input.month}`);
    const list = byHour.get(q.hour);
    if (list === undefined) byHour.set(q.hour, [q]);
    else list.push(q);
  }
  const hours = [...byHour.keys()].sort((a, b) => a - b);
  const at = (hour: number) => versionAt(input.versions, hour);

  const emit = (line: Line, plan: PricePlan, numerator: Dec, quantity: bigint, shares: readonly Share[], slot = shares[0]!.hour) => {
    const total = shares.reduce((s, x) => s + x.weight, 0n);
    const amount = priceUnits(numerator);
    for (const share of shares) {
      if (share.weight === 0n) continue;
      rows.push(row(line, plan, share.hour, slot, share.key, quantity * share.weight, total, shareUnits(amount, share.weight, line.denominator, total)));
    }
  };
  const unallocated = (line: Line, plan: PricePlan, hour: number, quantity: bigint, numerator: Dec) => {
    rows.push(row(line, plan, hour, hour, null, quantity, 1n, shareUnits(priceUnits(numerator), 1n, line.denominator, 1n)));
  };

  // Storage, in time order; checkpoints keep the cumulative for the marginal price of early deletes.
  const storage = new Meter();
  const checkpoints: { hour: number; cumulative: bigint }[] = [];
  const meteringByteHours = first.storage.metering === 'byte-hours';
  const storageDenominator = BigInt(first.storage.gbBytes) * hoursPerMonth * (meteringByteHours ? BigInt(HOUR) : 1n);
  const storageLine: Line = {
    category: 'storage',
    charge: 'storage',
    consumedUnit: meteringByteHours ? 'byte-seconds' : 'byte-days',
    consumedScale: meteringByteHours ? 1n : 24n,
    pricingUnit: 'GB-month',
    denominator: storageDenominator,
  };
  const storageBands = (plan: PricePlan) => bandsOf(plan.storage.tiers.map((t) => ({ uptoGb: t.uptoGb, price: t.pricePerGbMonth })), storageDenominator);
  const paddedSeconds = (plan: PricePlan, q: KeyHour) =>
    (q.byteSeconds ?? 0n) + BigInt(plan.storage.minimumObjectBytes) * (q.smallObjectSeconds ?? 0n) - (q.smallObjectByteSeconds ?? 0n);
  const unpricedHours = new Set<number>();
  let storageByteSecondsTotal = 0n;
  if (first.storage.metering === 'daily-peak') {
    for (let day = start; day < end; day += DAY) {
      const peak = input.dailyPeakBytes?.get(day) ?? 0n;
      const plan = at(day);
      if (peak === 0n || plan === undefined) continue;
      const shares: Share[] = [];
      for (let hour = day; hour < day + DAY; hour += HOUR) {
        for (const q of byHour.get(hour) ?? []) shares.push({ hour, key: q.key, weight: paddedSeconds(plan, q) });
      }
      const quantity = peak * 24n;
      const numerator = storage.take(quantity, storageBands(plan));
      checkpoints.push({ hour: day, cumulative: storage.cumulative });
      if (shares.some((s) => s.weight > 0n)) emit(storageLine, plan, numerator, quantity, shares, day);
      else unallocated(storageLine, plan, day, quantity, numerator);
    }
  }
  for (const hour of hours) {
    const plan = at(hour);
    if (plan === undefined) {
      unpricedHours.add(hour);
      continue;
    }
    if (first.storage.metering === 'daily-peak') continue;
    const shares: Share[] = [];
    for (const q of byHour.get(hour)!) {
      if (meteringByteHours) {
        const weight = paddedSeconds(plan, q);
        storageByteSecondsTotal += weight;
        shares.push({ hour, key: q.key, weight });
      } else if (hour % DAY === 0) {
        const bytes = (q.snapshotBytes ?? 0n) + BigInt(plan.storage.minimumObjectBytes) * (q.snapshotSmallObjects ?? 0n) - (q.snapshotSmallObjectBytes ?? 0n);
        shares.push({ hour, key: q.key, weight: bytes * 24n });
      }
    }
    const quantity = shares.reduce((s, x) => s + x.weight, 0n);
    if (quantity === 0n) continue;
    emit(storageLine, plan, storage.take(quantity, storageBands(plan)), quantity, shares);
    checkpoints.push({ hour, cumulative: storage.cumulative });
  }

  // Early deletes: the rest of the minimum duration, at the marginal storage price of the hour.
  const earlyLine: Line = { category: 'other', charge: 'early-delete', consumedUnit: 'byte-seconds', consumedScale: 1n, pricingUnit: 'GB-month', denominator: BigInt(first.storage.gbBytes) * hoursPerMonth * BigInt(HOUR) };
  let checkpoint = -1;
  for (const hour of hours) {
    const plan = at(hour);
    while (checkpoint + 1 < checkpoints.length && checkpoints[checkpoint + 1]!.hour <= hour) checkpoint++;
    const shares = (byHour.get(hour) ?? []).map((q) => ({ hour, key: q.key, weight: q.earlyDeleteByteSeconds ?? 0n }));
    const quantity = shares.reduce((s, x) => s + x.weight, 0n);
    if (plan === undefined || quantity === 0n || plan.storage.minimumDays === 0) continue;
    const price = Meter.priceAt(checkpoint < 0 ? 0n : checkpoints[checkpoint]!.cumulative, storageBands(plan));
    emit(earlyLine, plan, price.mul(dec(quantity)), quantity, shares);
  }

  // Requests, one meter per class; daily allowances restart at 00:00 UTC.
  const classNames = [...new Set(input.versions.flatMap((v) => Object.keys(v.requests.classes)))].sort();
  for (const cls of classNames) {
    const meter = new Meter();
    let day = -1;
    let usedToday = 0n;
    let chargedPaid = 0n;
    for (const hour of hours) {
      const plan = at(hour);
      const spec = plan?.requests.classes[cls];
      if (plan === undefined || spec === undefined) continue;
      const shares = byHour.get(hour)!
        .filter((q) => plan.requests.actions[q.key.action] === cls && (q.requests ?? 0) > 0)
        .map((q) => ({ hour, key: q.key, weight: BigInt(q.requests!) }));
      const quantity = shares.reduce((s, x) => s + x.weight, 0n);
      if (quantity === 0n) continue;
      if (hour - (hour % DAY) !== day) {
        day = hour - (hour % DAY);
        usedToday = 0n;
      }
      const dailyLeft = BigInt(spec.freePerDay ?? 0) - usedToday;
      const freeNow = dailyLeft <= 0n ? 0n : dailyLeft < quantity ? dailyLeft : quantity;
      usedToday += freeNow;
      const bands = requestBands(spec.price, spec.freePerMonth ?? 0);
      const before = meter.cumulative;
      const numerator = meter.take(quantity - freeNow, bands);
      chargedPaid += paidPart(before, meter.cumulative, bands);
      emit(requestLine(cls, spec.per), plan, numerator, quantity, shares);
    }
    const plan = at(lastHour);
    const spec = plan?.requests.classes[cls];
    if (input.monthComplete !== false && plan !== undefined && spec?.roundUpToWholeUnit === true) {
      const per = BigInt(spec.per);
      const extra = (per - (chargedPaid % per)) % per;
      if (extra > 0n) unallocated({ ...requestLine(cls, spec.per), charge: `request:${cls}:round-up` }, plan, lastHour, extra, dec(spec.price).mul(dec(extra)));
    }
  }

  // Egress; B2-style allowances (N × the month's average stored bytes) are a first free band.
  const multiple = first.egress.freeMultipleOfStorage;
  const egressScale = multiple === undefined ? 1n : hoursPerMonth * BigInt(HOUR);
  const egressLine: Line = { category: 'egress', charge: 'egress', consumedUnit: 'bytes', consumedScale: egressScale, pricingUnit: 'GB', denominator: BigInt(first.egress.gbBytes) * egressScale };
  const egress = new Meter();
  for (const hour of hours) {
    const plan = at(hour);
    if (plan === undefined) continue;
    const shares = byHour.get(hour)!.map((q) => ({ hour, key: q.key, weight: (q.egressBytes ?? 0n) * egressScale }));
    const quantity = shares.reduce((s, x) => s + x.weight, 0n);
    if (quantity === 0n) continue;
    const allowance = multiple === undefined ? 0n : BigInt(multiple) * storageByteSecondsTotal;
    const tiers = bandsOf(plan.egress.tiers.map((t) => ({ uptoGb: t.uptoGb, price: t.pricePerGb })), egressLine.denominator, allowance);
    const bands: Band[] = allowance > 0n ? [{ upto: allowance, price: ZERO }, ...tiers] : tiers;
    emit(egressLine, plan, egress.take(quantity, bands), quantity, shares);
  }

  // Month-end charges, priced by the version in force in the month's last hour.
  const endPlan = at(lastHour);
  if (input.monthComplete !== false && endPlan !== undefined) {
    const bands = storageBands(endPlan);
    const minimum = BigInt(endPlan.storage.monthlyMinimumGb) * storageDenominator;
    if (minimum > storage.cumulative) {
      const extra = minimum - storage.cumulative;
      unallocated({ ...storageLine, category: 'other', charge: 'monthly-minimum' }, endPlan, lastHour, extra, storage.take(extra, bands));
    }
    if (endPlan.storage.roundUpToWholeUnit === true) {
      const free = freeAllowance(bands);
      const billable = storage.cumulative > free ? storage.cumulative - free : 0n;
      const extra = (storageDenominator - (billable % storageDenominator)) % storageDenominator;
      if (extra > 0n) unallocated({ ...storageLine, charge: 'storage-round-up' }, endPlan, lastHour, extra, storage.take(extra, bands));
    }
    if (endPlan.monthlyFee !== undefined) {
      const feeLine: Line = { category: 'other', charge: 'monthly-fee', consumedUnit: 'month', consumedScale: 1n, pricingUnit: 'month', denominator: 1n };
      unallocated(feeLine, endPlan, lastHour, 1n, dec(endPlan.monthlyFee));
    }
  }

  for (const hour of unpricedHours) rows.push(...unpricedRows(byHour.get(hour)!));
  return rows.sort((a, b) => a.hour - b.hour);
}

function requestLine(cls: string, per: number): Line {
  return { category: 'request', charge: `request:${cls}`, consumedUnit: 'requests', consumedScale: 1n, pricingUnit: per === 1 ? 'requests' : `${per} requests`, denominator: BigInt(per) };
}

function requestBands(price: string, freePerMonth: number): Band[] {
  const paid = { upto: null, price: dec(price) };
  return freePerMonth > 0 ? [{ upto: BigInt(freePerMonth), price: ZERO }, paid] : [paid];
}

/** How much of the cumulative range [before, after) fell in priced bands. */
function paidPart(before: bigint, after: bigint, bands: readonly Band[]): bigint {
  const free = freeAllowance(bands);
  const from = before > free ? before : free;
  return after > from ? after - from : 0n;
}

/** consumed = consumedNumerator / consumedDenominator base units; cost in units of 10^-COST_PLACES. */
function row(line: Line, plan: PricePlan, hour: number, slot: number, key: Attribution | null, consumedNumerator: bigint, consumedDenominator: bigint, costUnits: bigint): CostRow {
  return {
    hour,
    slot,
    key,
    category: line.category,
    charge: line.charge,
    planId: plan.id,
    validFrom: plan.validFrom ?? null,
    currency: plan.currency,
    consumedQuantity: quantityText(consumedNumerator, consumedDenominator * line.consumedScale),
    consumedUnit: line.consumedUnit,
    pricingQuantity: quantityText(consumedNumerator, consumedDenominator * line.denominator),
    pricingUnit: line.pricingUnit,
    cost: unitsText(costUnits, COST_PLACES),
  };
}

/** Quantities nobody can price (no plan for the provider, or before a plan's first version). */
export function unpricedRows(quantities: readonly KeyHour[]): CostRow[] {
  const out: CostRow[] = [];
  const zero = unitsText(0n, COST_PLACES);
  const base = { category: 'unpriced' as const, charge: 'unpriced', planId: null, validFrom: null, currency: null, pricingQuantity: '0', pricingUnit: '', cost: zero };
  for (const q of quantities) {
    const measures: [string, bigint][] = [
      ['requests', BigInt(q.requests ?? 0)],
      ['bytes', q.egressBytes ?? 0n],
      ['byte-seconds', q.byteSeconds ?? 0n],
    ];
    for (const [unit, value] of measures) {
      if (value > 0n) out.push({ ...base, hour: q.hour, slot: q.hour, key: q.key, consumedQuantity: value.toString(), consumedUnit: unit });
    }
  }
  return out;
}
