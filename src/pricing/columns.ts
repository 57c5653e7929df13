/**
 * Priced fine rows as columns (typed arrays), not one object per attribution key × hour: a month of
 * 10M events is about fifteen million fine rows, which as objects with their decimal strings took
 * gigabytes and most of the CPU in garbage collection. Amounts stay exact integers: a BigInt64Array
 * holds each value, and the rare one that does not fit 64 bits is kept as a bigint beside it
 * (BigColumn), so no size is ever cut. The strings of a row (its key's labels, its quantity texts,
 * its cost text) are made only when a row is asked for as an object (rowAt: the FOCUS export, tests).
 */
import type { ActionName } from '../events/catalogue.js';
import { ACTION_NAMES } from '../events/catalogue.js';
import type { CostCategory, CostRow } from './engine.js';
import { COST_PLACES, quantityText, unitsText } from './money.js';
import type { PricePlan } from './plan.js';
import type { Attribution } from './quantities.js';

const HOUR = 3600;
const DAY = 86400;

function grown<T extends Int32Array | Uint8Array | Uint16Array | BigInt64Array>(a: T, need: number): T {
  if (need <= a.length) return a;
  const out = new (a.constructor as new (n: number) => T)(Math.max(need, a.length * 2, 16));
  out.set(a as never);
  return out;
}

/** The marker of a value kept beside the array (it does not fit 64 bits, or is this very value). */
const OUTSIDE = -(2n ** 63n);
const MAX = 2n ** 63n - 1n;

/** Exact integers of any size: 64-bit in a typed array, larger ones in a map beside it. */
export class BigColumn {
  data = new BigInt64Array(16);
  readonly outside = new Map<number, bigint>();

  set(i: number, v: bigint): void {
    if (i >= this.data.length) this.data = grown(this.data, i + 1);
    if (v > OUTSIDE && v <= MAX) this.data[i] = v;
    else {
      this.data[i] = OUTSIDE;
      this.outside.set(i, v);
    }
  }

  get(i: number): bigint {
    const v = this.data[i]!;
    return v === OUTSIDE ? this.outside.get(i)! : v;
  }
}

/** Strings as small integers (0: none): one dictionary for every dimension of a month's keys. */
export class Labels {
  readonly #ids = new Map<string, number>();
  readonly names: (string | null)[] = [null];

  id(value: string | null): number {
    if (value === null) return 0;
    let id = this.#ids.get(value);
    if (id === undefined) {
      id = this.names.length;
      this.#ids.set(value, id);
      this.names.push(value);
    }
    return id;
  }

  /** The id of a value already seen, else -1 (a filter value no row has). */
  find(value: string): number {
    return this.#ids.get(value) ?? -1;
  }
}

export const KEY_DIMENSIONS = ['customerId', 'featureId', 'clientType', 'clientId', 'bucket'] as const;
export type KeyDimension = (typeof KEY_DIMENSIONS)[number];
const ACTION_INDEX = new Map<string, number>(ACTION_NAMES.map((name, i) => [name, i]));

/** An action name's index in ACTION_NAMES (the KeyTable's action column). */
export function actionIndex(name: string): number {
  const i = ACTION_INDEX.get(name);
  if (i === undefined) throw new RangeError(`unknown action ${name}`);
  return i;
}

/** Attribution keys as columns of label ids; a key is its index. */
export class KeyTable {
  readonly labels: Labels;
  length = 0;
  /** Per KEY_DIMENSIONS: each key's label id. */
  dims: Int32Array[] = KEY_DIMENSIONS.map(() => new Int32Array(16));
  action = new Uint8Array(16);
  readonly #objects = new Map<object, number>();

  constructor(labels = new Labels()) {
    this.labels = labels;
  }

  /** A key of label ids (in KEY_DIMENSIONS order) and an action index. */
  addIds(ids: ArrayLike<number>, action: number): number {
    const i = this.length++;
    for (let d = 0; d < KEY_DIMENSIONS.length; d++) {
      const column = grown(this.dims[d]!, this.length);
      this.dims[d] = column;
      column[i] = ids[d]!;
    }
    this.action = grown(this.action, this.length);
    this.action[i] = action;
    return i;
  }

  /** The key of an Attribution object (the same object: the same key). */
  of(a: Attribution): number {
    let i = this.#objects.get(a);
    if (i === undefined) {
      i = this.addIds(KEY_DIMENSIONS.map((d) => this.labels.id(a[d])), actionIndex(a.action));
      this.#objects.set(a, i);
    }
    return i;
  }

  attribution(i: number): Attribution {
    const n = this.labels.names;
    const [customer, feature, clientType, clientId, bucket] = this.dims as [Int32Array, Int32Array, Int32Array, Int32Array, Int32Array];
    return {
      customerId: n[customer[i]!]!,
      featureId: n[feature[i]!]!,
      clientType: n[clientType[i]!]!,
      clientId: n[clientId[i]!]!,
      bucket: n[bucket[i]!]!,
      action: ACTION_NAMES[this.action[i]!] as ActionName,
    };
  }
}

/** What a row charges: its category, charge and units (engine.ts Line, with its plan). */
export interface ChargeLine {
  readonly category: CostCategory;
  readonly charge: string;
  readonly consumedUnit: string;
  /** Base units per consumed unit (e.g. 24 byte-hours per byte-day). */
  readonly consumedScale: bigint;
  readonly pricingUnit: string;
  /** Base units per pricing unit; 0: the row has no pricing quantity (unpriced). */
  readonly denominator: bigint;
  readonly plan: PricePlan | null;
}

/** Row flags: the run's step is a day (else an hour); its slot stays (the hours of one day's charge). */
const EVERY_DAY = 1;
const SLOT_FIXED = 2;
/** The key of a row no key used (`unallocated`). */
export const NO_KEY = -1;

/**
 * One account-month's fine rows (engine.ts CostRow) as columns: hour and slot (in hours since the
 * epoch), key (KeyTable index or NO_KEY), line, cost (units of 10^-COST_PLACES), the consumed
 * quantity as numerator / denominator base units (the denominator 1 unless set), and the run.
 */
export class PricedRows {
  length = 0;
  hour = new Int32Array(16);
  slot = new Int32Array(16);
  key = new Int32Array(16);
  line = new Uint16Array(16);
  times = new Int32Array(16);
  flags = new Uint8Array(16);
  readonly cost = new BigColumn();
  readonly consumed = new BigColumn();
  /** Rows whose consumed quantity's denominator is not 1 (a daily peak's shares). */
  readonly per = new Map<number, bigint>();
  readonly lines: ChargeLine[] = [];
  readonly #lineIds = new Map<string, number>();

  constructor(readonly keys: KeyTable) {}

  lineId(line: ChargeLine): number {
    const id = `${line.category}\u0000${line.charge}\u0000${line.consumedUnit}\u0000${line.consumedScale}\u0000${line.pricingUnit}\u0000${line.denominator}\u0000${line.plan?.id}\u0000${line.plan?.validFrom}`;
    let i = this.#lineIds.get(id);
    if (i === undefined) {
      i = this.lines.length;
      this.lines.push(line);
      this.#lineIds.set(id, i);
    }
    return i;
  }

  /** Appends a row: hour and slot in unix seconds; `every` the run's step in seconds. */
  push(line: number, hour: number, slot: number, key: number, consumed: bigint, per: bigint, cost: bigint, times = 1, every = HOUR, slotFixed = false): void {
    const i = this.length++;
    if (i >= this.hour.length) {
      const n = i + 1;
      this.hour = grown(this.hour, n);
      this.slot = grown(this.slot, n);
      this.key = grown(this.key, n);
      this.line = grown(this.line, n);
      this.times = grown(this.times, n);
      this.flags = grown(this.flags, n);
    }
    this.hour[i] = hour / HOUR;
    this.slot[i] = slot / HOUR;
    this.key[i] = key;
    this.line[i] = line;
    this.times[i] = times;
    this.flags[i] = (every === DAY ? EVERY_DAY : 0) | (slotFixed ? SLOT_FIXED : 0);
    this.cost.set(i, cost);
    this.consumed.set(i, consumed);
    if (per !== 1n) this.per.set(i, per);
  }

  /** Step of row i's run, in seconds. */
  every(i: number): number {
    return (this.flags[i]! & EVERY_DAY) !== 0 ? DAY : HOUR;
  }

  /** Rows reordered by hour, stably (the order they were priced in within an hour). */
  sortedByHour(): PricedRows {
    const n = this.length;
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < n; i++) {
      const h = this.hour[i]!;
      if (h < min) min = h;
      if (h > max) max = h;
    }
    const out = new PricedRows(this.keys);
    if (n === 0) return out;
    const counts = new Int32Array(max - min + 2);
    for (let i = 0; i < n; i++) counts[this.hour[i]! - min + 1]!++;
    for (let h = 1; h < counts.length; h++) counts[h]! += counts[h - 1]!;
    const order = new Int32Array(n);
    for (let i = 0; i < n; i++) order[counts[this.hour[i]! - min]!++] = i;
    const pick = <T extends Int32Array | Uint8Array | Uint16Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(n);
      for (let k = 0; k < n; k++) b[k] = a[order[k]!]!;
      return b;
    };
    out.length = n;
    out.hour = pick(this.hour);
    out.slot = pick(this.slot);
    out.key = pick(this.key);
    out.line = pick(this.line);
    out.times = pick(this.times);
    out.flags = pick(this.flags);
    out.cost.data = new BigInt64Array(n);
    out.consumed.data = new BigInt64Array(n);
    for (let k = 0; k < n; k++) {
      const i = order[k]!;
      out.cost.set(k, this.cost.get(i));
      out.consumed.set(k, this.consumed.get(i));
      const per = this.per.get(i);
      if (per !== undefined) out.per.set(k, per);
    }
    for (const line of this.lines) out.lineId(line);
    return out;
  }

  /** Row i as the engine's CostRow (its texts made now). */
  rowAt(i: number): CostRow {
    const line = this.lines[this.line[i]!]!;
    const key = this.key[i]!;
    const consumed = this.consumed.get(i);
    const per = this.per.get(i) ?? 1n;
    const plan = line.plan;
    const out: { -readonly [K in keyof CostRow]: CostRow[K] } = {
      hour: this.hour[i]! * HOUR,
      slot: this.slot[i]! * HOUR,
      key: key === NO_KEY ? null : this.keys.attribution(key),
      category: line.category,
      charge: line.charge,
      planId: plan?.id ?? null,
      validFrom: plan?.validFrom ?? null,
      currency: plan?.currency ?? null,
      consumedQuantity: quantityText(consumed, per * line.consumedScale),
      consumedUnit: line.consumedUnit,
      pricingQuantity: line.denominator === 0n ? '0' : quantityText(consumed, per * line.denominator),
      pricingUnit: line.pricingUnit,
      cost: unitsText(this.cost.get(i), COST_PLACES),
    };
    const times = this.times[i]!;
    if (times > 1) out.repeat = (this.flags[i]! & SLOT_FIXED) !== 0 ? { times, every: this.every(i), slotFixed: true } : { times, every: this.every(i) };
    return out;
  }

  /** Every row as a CostRow. */
  *objects(): Generator<CostRow> {
    for (let i = 0; i < this.length; i++) yield this.rowAt(i);
  }
}

/** Which keys pass a request's filters: per filtered key dimension, the label ids (or action indexes) it allows. */
export interface KeyFilter {
  /** [KEY_DIMENSIONS index or -1 for action, allowed ids] */
  readonly dims: readonly [number, ReadonlySet<number>][];
  /** Whether any dimension other than provider is filtered: then a row no key used never passes. */
  readonly keyed: boolean;
}

/**
 * A filter's key dimensions as ids of `labels` ('' is none; a value no key has matches nothing).
 * Provider is the account's, decided before (accountPasses).
 */
export function keyFilter(labels: Labels, filters: Readonly<Record<string, readonly string[] | undefined>>): KeyFilter {
  const dims: [number, Set<number>][] = [];
  for (const [d, values] of Object.entries(filters)) {
    if (d === 'provider' || values === undefined) continue;
    const allowed = new Set<number>();
    for (const v of values) {
      if (d === 'action') {
        const i = ACTION_INDEX.get(v);
        if (i !== undefined) allowed.add(i);
      } else allowed.add(v === '' ? 0 : labels.find(v));
    }
    dims.push([d === 'action' ? -1 : KEY_DIMENSIONS.indexOf(d as KeyDimension), allowed]);
  }
  return { dims, keyed: dims.length > 0 };
}

/** Whether key `key` of `keys` passes (NO_KEY: only where no key dimension is filtered). */
export function keyPasses(filter: KeyFilter, keys: KeyTable, key: number): boolean {
  if (key === NO_KEY) return !filter.keyed;
  for (const [d, allowed] of filter.dims) if (!allowed.has(d === -1 ? keys.action[key]! : keys.dims[d]![key]!)) return false;
  return true;
}

/**
 * The part of row i in [from, to) (unix seconds): its first hour (seconds), slot and hours, or
 * undefined when none of it is (engine.ts clipRow, on columns).
 */
export function clipAt(rows: PricedRows, i: number, from: number, to: number): { hour: number; slot: number; times: number } | undefined {
  const hour = rows.hour[i]! * HOUR;
  const times = rows.times[i]!;
  const slot = rows.slot[i]! * HOUR;
  if (times === 1) return hour >= from && hour < to ? { hour, slot, times } : undefined;
  const every = rows.every(i);
  const first = Math.max(0, Math.ceil((from - hour) / every));
  const last = Math.min(times, Math.ceil((to - hour) / every));
  if (last <= first) return undefined;
  const shift = first * every;
  return { hour: hour + shift, slot: (rows.flags[i]! & SLOT_FIXED) !== 0 ? slot : slot + shift, times: last - first };
}

/** The rows in [from, to) whose key passes `filter`, runs cut to the range (what the FOCUS export writes). */
export function selectRows(rows: PricedRows, from: number, to: number, filter: KeyFilter): PricedRows {
  const out = new PricedRows(rows.keys);
  for (const line of rows.lines) out.lineId(line);
  for (let i = 0; i < rows.length; i++) {
    if (!keyPasses(filter, rows.keys, rows.key[i]!)) continue;
    const part = clipAt(rows, i, from, to);
    if (part === undefined) continue;
    out.push(rows.line[i]!, part.hour, part.slot, rows.key[i]!, rows.consumed.get(i), rows.per.get(i) ?? 1n, rows.cost.get(i), part.times, rows.every(i), (rows.flags[i]! & SLOT_FIXED) !== 0);
  }
  return out;
}
