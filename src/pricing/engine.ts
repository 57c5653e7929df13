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
import { ACTION_NAMES } from '../events/catalogue.js';
import type { BigColumn, ChargeLine } from './columns.js';
import { KeyTable, NO_KEY, PricedRows } from './columns.js';
import type { Dec } from './money.js';
import { ZERO, dec, priceUnits, shareUnits } from './money.js';
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

/** What a row charges, before its plan is known. */
type Line = Omit<ChargeLine, 'plan'>;

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
  /** Its key in the month's KeyTable. */
  readonly key: number;
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

/** The engine's fine rows as objects (PricedRows.rowAt): what the tests and the pricing bench read. */
export function priceMonth(input: AccountMonth): CostRow[] {
  const keys = new KeyTable();
  return [...priceColumns({ ...input, keys }).objects()];
}

/**
 * An account-month as the engine prices it in columns: requests and egress per key × hour as
 * columns (`usage`: the fine usage rollup, as the stores read it), everything else (stored bytes,
 * early deletes) as KeyHour objects; every key is an index into `keys` (objects' keys are added
 * to it).
 */
export interface ColumnarMonth extends Omit<AccountMonth, 'quantities'> {
  readonly keys: KeyTable;
  readonly quantities: readonly KeyHour[];
  readonly usage?: UsageQuantities;
}

/** Requests and billable egress per key × hour: row i is key `key[i]` in the hour starting at `hour[i]` (unix seconds). */
export interface UsageQuantities {
  readonly length: number;
  readonly hour: Float64Array;
  readonly key: Int32Array;
  readonly requests: Float64Array;
  readonly egress: BigColumn;
}

/**
 * The quantities of single hours (requests, egress, early deletes, stored bytes of one hour), by
 * hour: the usage rows first (entries [0, usage.length)), then the single-hour objects.
 */
class HourlyEntries {
  readonly count: number;
  /** Entries of the month's hour h: order[offsets[h] .. offsets[h + 1]), in input order. */
  readonly order: Int32Array;
  readonly offsets: Int32Array;

  constructor(
    private readonly usage: UsageQuantities | undefined,
    private readonly objects: readonly KeyHour[],
    private readonly objectKeys: Int32Array,
    start: number,
    monthHours: number,
  ) {
    const u = usage?.length ?? 0;
    this.count = u + objects.length;
    const hourOf = new Int32Array(this.count);
    for (let j = 0; j < u; j++) hourOf[j] = (usage!.hour[j]! - start) / HOUR;
    for (let k = 0; k < objects.length; k++) hourOf[u + k] = (objects[k]!.hour - start) / HOUR;
    this.offsets = new Int32Array(monthHours + 1);
    for (let j = 0; j < this.count; j++) this.offsets[hourOf[j]! + 1]!++;
    for (let h = 0; h < monthHours; h++) this.offsets[h + 1]! += this.offsets[h]!;
    const next = this.offsets.slice(0, monthHours);
    this.order = new Int32Array(this.count);
    for (let j = 0; j < this.count; j++) this.order[next[hourOf[j]!]!++] = j;
  }

  #u(): number {
    return this.usage?.length ?? 0;
  }

  key(j: number): number {
    const u = this.#u();
    return j < u ? this.usage!.key[j]! : this.objectKeys[j - u]!;
  }

  requests(j: number): number {
    const u = this.#u();
    return j < u ? this.usage!.requests[j]! : (this.objects[j - u]!.requests ?? 0);
  }

  egress(j: number): bigint {
    const u = this.#u();
    return j < u ? this.usage!.egress.get(j) : (this.objects[j - u]!.egressBytes ?? 0n);
  }

  earlyDelete(j: number): bigint {
    const u = this.#u();
    return j < u ? 0n : (this.objects[j - u]!.earlyDeleteByteSeconds ?? 0n);
  }

  byteSeconds(j: number): bigint {
    const u = this.#u();
    return j < u ? 0n : (this.objects[j - u]!.byteSeconds ?? 0n);
  }
}

/** Lines by plan, as PricedRows line ids: a row's line is found once per slot, not built per row. */
class LineIds {
  readonly #ids = new Map<string, Map<PricePlan | null, number>>();

  constructor(private readonly out: PricedRows) {}

  of(line: Line, plan: PricePlan | null): number {
    const name = `${line.category}\u0000${line.charge}\u0000${line.consumedUnit}\u0000${line.consumedScale}\u0000${line.pricingUnit}\u0000${line.denominator}`;
    let byPlan = this.#ids.get(name);
    if (byPlan === undefined) {
      byPlan = new Map();
      this.#ids.set(name, byPlan);
    }
    let id = byPlan.get(plan);
    if (id === undefined) {
      id = this.out.lineId({ ...line, plan });
      byPlan.set(plan, id);
    }
    return id;
  }
}

const UNPRICED: Record<'requests' | 'bytes' | 'byte-seconds', Line> = {
  requests: { category: 'unpriced', charge: 'unpriced', consumedUnit: 'requests', consumedScale: 1n, pricingUnit: '', denominator: 0n },
  bytes: { category: 'unpriced', charge: 'unpriced', consumedUnit: 'bytes', consumedScale: 1n, pricingUnit: '', denominator: 0n },
  'byte-seconds': { category: 'unpriced', charge: 'unpriced', consumedUnit: 'byte-seconds', consumedScale: 1n, pricingUnit: '', denominator: 0n },
};

/** A quantity nobody can price, as its unpriced rows (one per measure it has). */
function pushUnpriced(out: PricedRows, lines: LineIds, hour: number, key: number, requests: bigint, egress: bigint, byteSeconds: bigint, hours: number): void {
  if (requests > 0n) out.push(lines.of(UNPRICED.requests, null), hour, hour, key, requests, 1n, 0n, hours);
  if (egress > 0n) out.push(lines.of(UNPRICED.bytes, null), hour, hour, key, egress, 1n, 0n, hours);
  if (byteSeconds > 0n) out.push(lines.of(UNPRICED['byte-seconds'], null), hour, hour, key, byteSeconds, 1n, 0n, hours);
}

/** The engine itself (see the top of this file): one account-month's fine rows as columns, in hour order. */
export function priceColumns(input: ColumnarMonth): PricedRows {
  const { start, end } = monthBounds(input.month);
  const first = input.versions[0];
  if (first === undefined) throw new RangeError('priceMonth needs at least one plan version');
  const hoursPerMonth = BigInt(first.storage.hoursPerMonth === 'calendar' ? (end - start) / HOUR : first.storage.hoursPerMonth);
  const lastHour = end - HOUR;
  const monthHours = (end - start) / HOUR;
  const keys = input.keys;
  const out = new PricedRows(keys);
  const lines = new LineIds(out);
  const usage = input.usage;
  if (usage !== undefined) {
    for (let j = 0; j < usage.length; j++) {
      const hour = usage.hour[j]!;
      if (!(hour >= start && hour < end && hour % HOUR === 0)) throw new RangeError(`quantity hours ${hour} × 1 are not whole hours of ${input.month}`);
    }
  }
  const single: KeyHour[] = [];
  const stored: KeyHour[] = [];
  for (const q of input.quantities) {
    const n = q.hours ?? 1;
    if (q.hour < start || q.hour % HOUR !== 0 || !Number.isInteger(n) || n < 1 || q.hour + n * HOUR > end) throw new RangeError(`quantity hours ${q.hour} × ${n} are not whole hours of ${input.month}`);
    if (n > 1 && (q.requests !== undefined || q.egressBytes !== undefined || q.earlyDeleteByteSeconds !== undefined)) throw new RangeError('only storage quantities repeat over hours');
    if (hasStorage(q)) stored.push(q);
    if (n === 1) single.push(q);
  }
  const singleKeys = new Int32Array(single.length);
  single.forEach((q, k) => {
    singleKeys[k] = keys.of(q.key);
  });
  const entries = new HourlyEntries(usage, single, singleKeys, start, monthHours);
  /** The month's hours (indices) with single-hour quantities, ascending. */
  const hours: number[] = [];
  for (let h = 0; h < monthHours; h++) if (entries.offsets[h + 1]! > entries.offsets[h]!) hours.push(h);
  const at = (hour: number) => versionAt(input.versions, hour);

  // Reused per slot: the entries sharing a slot's amount and their weights.
  let shareEntries: number[] = [];
  let shareWeights: bigint[] = [];
  const emit = (line: Line, plan: PricePlan, numerator: Dec, hour: number) => {
    const total = shareWeights.reduce((s, x) => s + x, 0n);
    const amount = priceUnits(numerator);
    const id = lines.of(line, plan);
    for (let k = 0; k < shareEntries.length; k++) {
      const weight = shareWeights[k]!;
      if (weight === 0n) continue;
      // The consumed quantity is the slot's quantity (= total) × weight / total: the weight.
      out.push(id, hour, hour, entries.key(shareEntries[k]!), weight, 1n, shareUnits(amount, weight, line.denominator, total));
    }
  };
  const unallocated = (line: Line, plan: PricePlan, hour: number, quantity: bigint, numerator: Dec) => {
    out.push(lines.of(line, plan), hour, hour, NO_KEY, quantity, 1n, shareUnits(priceUnits(numerator), 1n, line.denominator, 1n));
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
      if (v.plan !== undefined) pieces.push({ q, key: keys.of(q.key), from: a, to: b, plan: v.plan });
      else if (to - from > 1) pushUnpriced(out, lines, start + a * HOUR, keys.of(q.key), BigInt(q.requests ?? 0), q.egressBytes ?? 0n, q.byteSeconds ?? 0n, b - a);
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
    const id = lines.of(storageLine, piece.plan);
    for (let i = from; i < to; ) {
      const s = slots[i]!;
      const j = Math.min(runEnd[i]!, to);
      const cost = s.price !== undefined ? shareUnits(s.price, weight, storageLine.denominator, 1n) : shareUnits(s.amount, weight, storageLine.denominator, s.total);
      out.push(id, time(i), time(i), piece.key, weight, 1n, cost, j - i, every);
      i = j;
    }
  };
  /** For each slot, the end of the run of slots of the same band price it starts (itself alone when it crossed a band). */
  const runEnds = (slots: readonly (SlotCharge | undefined)[]) => {
    const ends = new Int32Array(slots.length);
    for (let i = slots.length - 1; i >= 0; i--) {
      const s = slots[i];
      const n = slots[i + 1];
      ends[i] = s?.price !== undefined && n?.price !== undefined && n.plan === s.plan && n.price === s.price ? ends[i + 1]! : i + 1;
    }
    return ends;
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
      const id = lines.of(storageLine, plan);
      for (const { piece, hours: n, weight } of shares) {
        const hour = Math.max(start + piece.from * HOUR, day);
        out.push(id, hour, day, piece.key, quantity * weight, total, shareUnits(amount, weight, storageLine.denominator, total), n, HOUR, n > 1);
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
  /** The entries of hour index h, each passed to `f`. */
  const eachEntry = (h: number, f: (j: number) => void) => {
    for (let k = entries.offsets[h]!; k < entries.offsets[h + 1]!; k++) f(entries.order[k]!);
  };

  // Early deletes: the rest of the minimum duration, at the marginal storage price of the hour.
  const earlyLine: Line = { category: 'other', charge: 'early-delete', consumedUnit: 'byte-seconds', consumedScale: 1n, pricingUnit: 'GB-month', denominator: BigInt(first.storage.gbBytes) * hoursPerMonth * BigInt(HOUR) };
  let checkpoint = -1;
  for (const h of hours) {
    const hour = start + h * HOUR;
    const plan = at(hour);
    while (checkpoint + 1 < checkpoints.length && checkpoints[checkpoint + 1]!.hour <= hour) checkpoint++;
    if (plan === undefined || plan.storage.minimumDays === 0) continue;
    shareEntries = [];
    shareWeights = [];
    let quantity = 0n;
    eachEntry(h, (j) => {
      const w = entries.earlyDelete(j);
      shareEntries.push(j);
      shareWeights.push(w);
      quantity += w;
    });
    if (quantity === 0n) continue;
    const price = Meter.priceAt(checkpoint < 0 ? 0n : checkpoints[checkpoint]!.cumulative, storageBands(plan));
    emit(earlyLine, plan, price.mul(dec(quantity)), hour);
  }

  // Requests, one meter per class; daily allowances restart at 00:00 UTC.
  const classNames = [...new Set(input.versions.flatMap((v) => Object.keys(v.requests.classes)))].sort();
  /** Per plan version, each action's (ACTION_NAMES index) class, as an index of classNames (-1: none, or free). */
  const classOf = new Map<PricePlan, Int16Array>(input.versions.map((v) => [v, Int16Array.from(ACTION_NAMES, (a) => classNames.indexOf(v.requests.actions[a] ?? ''))]));
  // Each entry's class in its hour's version (-1: no requests, or none), found once for all classes.
  const entryClass = new Int16Array(entries.count).fill(-1);
  for (const h of hours) {
    const plan = at(start + h * HOUR);
    if (plan === undefined) continue;
    const classes = classOf.get(plan)!;
    for (let k = entries.offsets[h]!; k < entries.offsets[h + 1]!; k++) {
      const j = entries.order[k]!;
      if (entries.requests(j) > 0) entryClass[j] = classes[keys.action[entries.key(j)]!]!;
    }
  }
  for (const [c, cls] of classNames.entries()) {
    const meter = new Meter();
    let day = -1;
    let usedToday = 0n;
    let chargedPaid = 0n;
    for (const h of hours) {
      const hour = start + h * HOUR;
      const plan = at(hour);
      const spec = plan?.requests.classes[cls];
      if (plan === undefined || spec === undefined) continue;
      shareEntries = [];
      shareWeights = [];
      let quantity = 0n;
      for (let k = entries.offsets[h]!; k < entries.offsets[h + 1]!; k++) {
        const j = entries.order[k]!;
        if (entryClass[j] !== c) continue;
        const w = BigInt(entries.requests(j));
        shareEntries.push(j);
        shareWeights.push(w);
        quantity += w;
      }
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
      emit(requestLine(cls, spec.per), plan, numerator, hour);
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
  for (const h of hours) {
    const hour = start + h * HOUR;
    const plan = at(hour);
    if (plan === undefined) continue;
    shareEntries = [];
    shareWeights = [];
    let quantity = 0n;
    eachEntry(h, (j) => {
      const w = entries.egress(j) * egressScale;
      shareEntries.push(j);
      shareWeights.push(w);
      quantity += w;
    });
    if (quantity === 0n) continue;
    const allowance = multiple === undefined ? 0n : BigInt(multiple) * storageByteSecondsTotal;
    const tiers = bandsOf(plan.egress.tiers.map((t) => ({ uptoGb: t.uptoGb, price: t.pricePerGb })), egressLine.denominator, allowance);
    const bands: Band[] = allowance > 0n ? [{ upto: allowance, price: ZERO }, ...tiers] : tiers;
    emit(egressLine, plan, egress.take(quantity, bands), hour);
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

  // Hours no version prices: their single-hour quantities are unpriced.
  for (const h of hours) {
    const hour = start + h * HOUR;
    if (at(hour) !== undefined) continue;
    eachEntry(h, (j) => pushUnpriced(out, lines, hour, entries.key(j), BigInt(entries.requests(j)), entries.egress(j), entries.byteSeconds(j), 1));
  }
  return out.sortedByHour();
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

/** Quantities nobody can price (no plan for the provider, or before a plan's first version). */
export function unpricedRows(quantities: readonly KeyHour[]): CostRow[] {
  const keys = new KeyTable();
  return [...unpricedColumns(keys, undefined, quantities).objects()];
}

/** The same as columns: usage rows first, then the objects, each in input order. */
export function unpricedColumns(keys: KeyTable, usage: UsageQuantities | undefined, quantities: readonly KeyHour[]): PricedRows {
  const out = new PricedRows(keys);
  const lines = new LineIds(out);
  for (let j = 0; j < (usage?.length ?? 0); j++) pushUnpriced(out, lines, usage!.hour[j]!, usage!.key[j]!, BigInt(usage!.requests[j]!), usage!.egress.get(j), 0n, 1);
  for (const q of quantities) pushUnpriced(out, lines, q.hour, keys.of(q.key), BigInt(q.requests ?? 0), q.egressBytes ?? 0n, q.byteSeconds ?? 0n, q.hours ?? 1);
  return out;
}
