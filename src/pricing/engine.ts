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
  /** A run: this row stands for several equal rows (rowsOf lists them); absent, for one. */
  readonly repeat?: Repeat;
}

/**
 * `times` rows `every` seconds apart, from `hour` (and `slot`, unless `slotFixed`: the hours of
 * one day's charge), each with the same quantities and cost: a run of equal hours priced once.
 */
export interface Repeat {
  readonly times: number;
  readonly every: number;
  readonly slotFixed?: boolean;
}

/** The rows a row stands for: itself, or each of its run. */
export function* rowsOf(r: CostRow): Generator<CostRow> {
  if (r.repeat === undefined) {
    yield r;
    return;
  }
  const { repeat, ...one } = r;
  for (let k = 0; k < repeat.times; k++) yield { ...one, hour: r.hour + k * repeat.every, slot: repeat.slotFixed === true ? r.slot : r.slot + k * repeat.every };
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

/** Whether a quantity carries storage (the only quantities that may repeat). */
const STORAGE_FIELDS = ['byteSeconds', 'smallObjectSeconds', 'smallObjectByteSeconds', 'snapshotBytes', 'snapshotSmallObjects', 'snapshotSmallObjectBytes'] as const;
const hasStorage = (q: KeyHour) => STORAGE_FIELDS.some((f) => (q[f] ?? 0n) !== 0n);

/** A storage quantity's hours [from, to) (indices from the month's start) under one plan version. */
interface Piece {
  readonly q: KeyHour;
  readonly from: number;
  readonly to: number;
  readonly plan: PricePlan;
}

/** One slot's storage charge (an hour, or a day for daily metering): what its keys share. */
interface SlotCharge {
  readonly plan: PricePlan;
  /** The slot's amount in 10^-15 units, and the weights it is shared by. */
  readonly amount: bigint;
  readonly total: bigint;
  /**
   * When the slot's quantity fell within one band: its price in 10^-15 units. A key's share is
   * then amount × w / total = price × w whatever the other keys held, so equal weights in
   * consecutive such slots of one band cost the same: a run is priced once.
   */
  readonly price: bigint | undefined;
}

/** The part of a row in hours [from, to): itself, a shorter run, or nothing. */
export function clipRow<R extends CostRow>(r: R, from: number, to: number): R | undefined {
  if (r.repeat === undefined) return r.hour >= from && r.hour < to ? r : undefined;
  const { times, every, slotFixed } = r.repeat;
  const first = Math.max(0, Math.ceil((from - r.hour) / every));
  const last = Math.min(times, Math.ceil((to - r.hour) / every));
  if (last <= first) return undefined;
  if (first === 0 && last === times) return r;
  const { repeat: _repeat, ...one } = r;
  const shift = first * every;
  return { ...one, hour: r.hour + shift, slot: slotFixed === true ? r.slot : r.slot + shift, ...(last - first > 1 ? { repeat: { ...r.repeat, times: last - first } } : {}) } as R;
}

export function priceMonth(input: AccountMonth): CostRow[] {
  const { start, end } = monthBounds(input.month);
  const first = input.versions[0];
  if (first === undefined) throw new RangeError('priceMonth needs at least one plan version');
  const hoursPerMonth = BigInt(first.storage.hoursPerMonth === 'calendar' ? (end - start) / HOUR : first.storage.hoursPerMonth);
  const lastHour = end - HOUR;
  const monthHours = (end - start) / HOUR;
  const rows: CostRow[] = [];
  const byHour = new Map<number, KeyHour[]>();
  const stored: KeyHour[] = [];
  for (const q of input.quantities) {
    const n = q.hours ?? 1;
    if (q.hour < start || q.hour % HOUR !== 0 || !Number.isInteger(n) || n < 1 || q.hour + n * HOUR > end) throw new RangeError(`quantity hours ${q.hour} × ${n} are not whole hours of ${input.month}`);
    if (n > 1 && (q.requests !== undefined || q.egressBytes !== undefined || q.earlyDeleteByteSeconds !== undefined)) throw new RangeError('only storage quantities repeat over hours');
    if (hasStorage(q)) stored.push(q);
    if (n > 1) continue;
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
  const bandsByPlan = new Map<PricePlan, Band[]>();
  const storageBands = (plan: PricePlan) => {
    let bands = bandsByPlan.get(plan);
    if (bands === undefined) {
      bands = bandsOf(plan.storage.tiers.map((t) => ({ uptoGb: t.uptoGb, price: t.pricePerGbMonth })), storageDenominator);
      bandsByPlan.set(plan, bands);
    }
    return bands;
  };
  const paddedSeconds = (plan: PricePlan, q: KeyHour) =>
    (q.byteSeconds ?? 0n) + BigInt(plan.storage.minimumObjectBytes) * (q.smallObjectSeconds ?? 0n) - (q.smallObjectByteSeconds ?? 0n);
  const snapshotWeight = (plan: PricePlan, q: KeyHour) =>
    ((q.snapshotBytes ?? 0n) + BigInt(plan.storage.minimumObjectBytes) * (q.snapshotSmallObjects ?? 0n) - (q.snapshotSmallObjectBytes ?? 0n)) * 24n;
  const unpricedHours = new Set<number>();
  let storageByteSecondsTotal = 0n;

  // Each stored quantity cut where the plan version changes; runs in hours no version prices are unpriced.
  const versionRuns: { from: number; to: number; plan: PricePlan | undefined }[] = [];
  for (let i = 0; i < monthHours; i++) {
    const plan = at(start + i * HOUR);
    const last = versionRuns[versionRuns.length - 1];
    if (last !== undefined && last.plan === plan) last.to = i + 1;
    else versionRuns.push({ from: i, to: i + 1, plan });
  }
  const pieces: Piece[] = [];
  for (const q of stored) {
    const from = (q.hour - start) / HOUR;
    const to = from + (q.hours ?? 1);
    for (const v of versionRuns) {
      const a = Math.max(from, v.from);
      const b = Math.min(to, v.to);
      if (a >= b) continue;
      if (v.plan !== undefined) pieces.push({ q, from: a, to: b, plan: v.plan });
      else if (to - from > 1) rows.push(...unpricedRows([{ ...q, hour: start + a * HOUR, hours: b - a }]));
    }
  }

  /** Takes one slot's quantity from the storage meter. */
  const charge = (plan: PricePlan, slotHour: number, quantity: bigint): SlotCharge => {
    const bands = storageBands(plan);
    const band = bands.find((x) => x.upto === null || storage.cumulative < x.upto)!;
    const within = band.upto === null || storage.cumulative + quantity <= band.upto;
    const amount = priceUnits(storage.take(quantity, bands));
    checkpoints.push({ hour: slotHour, cumulative: storage.cumulative });
    return { plan, amount, total: quantity, price: within ? priceUnits(band.price) : undefined };
  };
  /**
   * A piece's rows over slots [from, to) (slot i at `time(i)`) where it weighs `weight`: one row per
   * run of slots of one band price, one per slot where the quantity crossed a band.
   */
  const sharesOf = (piece: Piece, weight: bigint, slots: readonly (SlotCharge | undefined)[], runEnd: Int32Array, from: number, to: number, time: (i: number) => number, every: number) => {
    for (let i = from; i < to; ) {
      const s = slots[i]!;
      const j = Math.min(runEnd[i]!, to);
      const cost = s.price !== undefined ? shareUnits(s.price, weight, storageLine.denominator, 1n) : shareUnits(s.amount, weight, storageLine.denominator, s.total);
      rows.push(row(storageLine, piece.plan, time(i), time(i), piece.q.key, weight, 1n, cost, j - i > 1 ? { times: j - i, every } : undefined));
      i = j;
    }
  };
  /** For each slot, the end of the run of slots of the same band price it starts (itself alone when it crossed a band). */
  const runEnds = (slots: readonly (SlotCharge | undefined)[]) => {
    const out = new Int32Array(slots.length);
    for (let i = slots.length - 1; i >= 0; i--) {
      const s = slots[i];
      const n = slots[i + 1];
      out[i] = s?.price !== undefined && n?.price !== undefined && n.plan === s.plan && n.price === s.price ? out[i + 1]! : i + 1;
    }
    return out;
  };

  if (first.storage.metering === 'daily-peak') {
    // Each day's peak is shared out to the keys by their padded byte-seconds in that day's hours.
    const days = Math.ceil(monthHours / 24);
    const byDay: { piece: Piece; hours: number; weight: bigint }[][] = Array.from({ length: days }, () => []);
    for (const piece of pieces) {
      for (let d = Math.floor(piece.from / 24); d * 24 < piece.to; d++) {
        const plan = at(start + d * DAY);
        if (plan === undefined) continue;
        const hoursIn = Math.min(piece.to, d * 24 + 24) - Math.max(piece.from, d * 24);
        byDay[d]!.push({ piece, hours: hoursIn, weight: paddedSeconds(plan, piece.q) });
      }
    }
    for (let d = 0; d < days; d++) {
      const day = start + d * DAY;
      const peak = input.dailyPeakBytes?.get(day) ?? 0n;
      const plan = at(day);
      if (peak === 0n || plan === undefined) continue;
      const shares = byDay[d]!.filter((s) => s.weight !== 0n);
      const quantity = peak * 24n;
      const numerator = storage.take(quantity, storageBands(plan));
      checkpoints.push({ hour: day, cumulative: storage.cumulative });
      if (shares.length === 0) {
        unallocated(storageLine, plan, day, quantity, numerator);
        continue;
      }
      const total = shares.reduce((s, x) => s + x.weight * BigInt(x.hours), 0n);
      const amount = priceUnits(numerator);
      for (const { piece, hours: n, weight } of shares) {
        const hour = Math.max(start + piece.from * HOUR, day);
        rows.push(row(storageLine, plan, hour, day, piece.q.key, quantity * weight, total, shareUnits(amount, weight, storageLine.denominator, total), n > 1 ? { times: n, every: HOUR, slotFixed: true } : undefined));
      }
    }
  } else if (meteringByteHours) {
    // The account's byte-seconds per hour, from where each piece starts and ends.
    const diff = new Array<bigint>(monthHours + 1).fill(0n);
    const weights = pieces.map((piece) => paddedSeconds(piece.plan, piece.q));
    pieces.forEach((piece, k) => {
      diff[piece.from] = diff[piece.from]! + weights[k]!;
      diff[piece.to] = diff[piece.to]! - weights[k]!;
    });
    const slots: (SlotCharge | undefined)[] = new Array(monthHours);
    let total = 0n;
    for (let i = 0; i < monthHours; i++) {
      total += diff[i]!;
      const plan = at(start + i * HOUR);
      if (plan === undefined) continue;
      storageByteSecondsTotal += total;
      if (total !== 0n) slots[i] = charge(plan, start + i * HOUR, total);
    }
    const runEnd = runEnds(slots);
    pieces.forEach((piece, k) => {
      if (weights[k] !== 0n) sharesOf(piece, weights[k]!, slots, runEnd, piece.from, piece.to, (i) => start + i * HOUR, HOUR);
    });
  } else {
    // Daily snapshots: the keys' padded bytes at each midnight (hour 24d), as byte-days.
    const days = Math.ceil(monthHours / 24);
    const diff = new Array<bigint>(days + 1).fill(0n);
    const spans = pieces.map((piece) => ({ from: Math.ceil(piece.from / 24), to: Math.ceil(piece.to / 24), weight: snapshotWeight(piece.plan, piece.q) }));
    for (const s of spans) {
      if (s.from >= s.to) continue;
      diff[s.from] = diff[s.from]! + s.weight;
      diff[s.to] = diff[s.to]! - s.weight;
    }
    const slots: (SlotCharge | undefined)[] = new Array(days);
    let total = 0n;
    for (let d = 0; d < days; d++) {
      total += diff[d]!;
      const plan = at(start + d * DAY);
      if (plan !== undefined && total !== 0n) slots[d] = charge(plan, start + d * DAY, total);
    }
    const runEnd = runEnds(slots);
    pieces.forEach((piece, k) => {
      const s = spans[k]!;
      if (s.weight !== 0n && s.from < s.to) sharesOf(piece, s.weight, slots, runEnd, s.from, s.to, (d) => start + d * DAY, DAY);
    });
  }
  for (const hour of hours) if (at(hour) === undefined) unpricedHours.add(hour);

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
function row(line: Line, plan: PricePlan, hour: number, slot: number, key: Attribution | null, consumedNumerator: bigint, consumedDenominator: bigint, costUnits: bigint, repeat?: Repeat): CostRow {
  const out: { -readonly [K in keyof CostRow]: CostRow[K] } = {
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
  // Set after, not spread in: a literal with a conditional spread is built the slow way, and rows are millions.
  if (repeat !== undefined) out.repeat = repeat;
  return out;
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
    const n = q.hours ?? 1;
    for (const [unit, value] of measures) {
      if (value > 0n) out.push({ ...base, hour: q.hour, slot: q.hour, key: q.key, consumedQuantity: value.toString(), consumedUnit: unit, ...(n > 1 ? { repeat: { times: n, every: HOUR } } : {}) });
    }
  }
  return out;
}
