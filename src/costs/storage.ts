/**
 * From the object inventory (the StorageFeed port) to the pricing engine's storage quantities of one
 * UTC month, per storage key × hour (src/pricing/quantities.ts says what each one means). Pure code:
 * the cost service fetches, this computes.
 *
 * One notion of "live at an instant" throughout, the inventory's: an interval [start, end) adds its
 * bytes from `start` and removes them at `end`. The bytes of a key at an hour's start (`open`) are
 * the sum of every delta of the earlier hours, so a version created exactly at 00:00 is not in that
 * midnight's snapshot, and one ended exactly at 00:00 still is (both are in byte-seconds exactly as
 * long as they lived). Small objects use the same rule, so padding always meets the bytes it pads.
 */
import { BigColumn } from '../pricing/columns.js';
import type { StorageDeltaRow, StorageInterval, StorageKey } from '../store/types.js';

const HOUR = 3600;
const DAY = 86400;

/** A storage key's quantities in one hour (absent: zero). */
export interface StorageHour {
  hour: number;
  key: StorageKey;
  byteSeconds?: bigint;
  snapshotBytes?: bigint;
  smallObjectSeconds?: bigint;
  smallObjectByteSeconds?: bigint;
  snapshotSmallObjects?: bigint;
  snapshotSmallObjectBytes?: bigint;
  earlyDeleteByteSeconds?: bigint;
}

/**
 * A storage key's quantities repeated over `hours` consecutive hours from `hour`: the hourly ones in
 * each hour, the snapshot ones at each UTC midnight among them (the pricing engine's KeyHour run).
 */
export interface StorageRun extends StorageHour {
  hours: number;
}

type Field = Exclude<keyof StorageHour, 'hour' | 'key'>;
const FIELDS: readonly Field[] = ['byteSeconds', 'snapshotBytes', 'smallObjectSeconds', 'smallObjectByteSeconds', 'snapshotSmallObjects', 'snapshotSmallObjectBytes', 'earlyDeleteByteSeconds'];
const FIELD_INDEX = new Map<Field, number>(FIELDS.map((f, i) => [f, i]));
const SNAPSHOT = new Set<Field>(['snapshotBytes', 'snapshotSmallObjects', 'snapshotSmallObjectBytes']);
/** An entry's flag (beside its field's index): a single hour's quantity, not a level's change. */
const POINT = 8;

/**
 * A stable text of a storage key (a map key). Made once per key object by its users (StorageHours
 * numbers keys by object first): a month has about as many keys as delta rows (704k keys in 1.1M
 * rows at 3M events), so no cache of texts by object is kept (a WeakMap of millions slowed every
 * collection).
 */
export function storageKeyId(key: StorageKey): string {
  const n = (v: string | null) => (v === null ? '\u0001' : v);
  return `${n(key.provider)}\u0000${n(key.bucket)}\u0000${n(key.customerId)}\u0000${n(key.featureId)}\u0000${n(key.clientType)}\u0000${n(key.clientId)}\u0000${key.action}`;
}

const grow = <T extends Int32Array | Uint8Array>(a: T): T => {
  const b = new (a.constructor as new (n: number) => T)(a.length * 2);
  b.set(a);
  return b;
};

/**
 * Collects quantities per key as piecewise constant levels (`addRange`: a change where it starts
 * and where it ends) plus single hours (`add`): a key's live bytes only change where it has deltas,
 * so its runs number its changes, not its hours. Entries are appended to columns (key, hour, field,
 * value), not kept as per-key maps of per-hour objects: at 3M events of the reference mix a month
 * is millions of them, and as objects their allocation and collection was most of its stored-bytes time.
 */
export class StorageHours {
  /** By object first (a read gives one object per key), then by text (another object of the same key). */
  readonly #objects = new Map<StorageKey, number>();
  readonly #ids = new Map<string, number>();
  readonly #keys: StorageKey[] = [];
  #length = 0;
  #key = new Int32Array(1024);
  /** Hours since the epoch. */
  #hour = new Int32Array(1024);
  /** FIELDS index, | POINT for a single hour. */
  #kind = new Uint8Array(1024);
  readonly #value = new BigColumn();

  /**
   * A key's number, for addAt and addRangeAt; given first, its place in the runs' order (runs come
   * in the order keys were first given).
   */
  key(key: StorageKey): number {
    let k = this.#objects.get(key);
    if (k !== undefined) return k;
    const id = storageKeyId(key);
    k = this.#ids.get(id);
    if (k === undefined) {
      k = this.#keys.length;
      this.#keys.push(key);
      this.#ids.set(id, k);
    }
    this.#objects.set(key, k);
    return k;
  }

  #push(k: number, hour: number, kind: number, value: bigint): void {
    const i = this.#length++;
    if (i === this.#key.length) {
      this.#key = grow(this.#key);
      this.#hour = grow(this.#hour);
      this.#kind = grow(this.#kind);
    }
    this.#key[i] = k;
    this.#hour[i] = hour / HOUR;
    this.#kind[i] = kind;
    this.#value.set(i, value);
  }

  /** `value` added to `field` in the one hour `hour`. */
  add(key: StorageKey, hour: number, field: Field, value: bigint): void {
    if (value !== 0n) this.addAt(this.key(key), hour, field, value);
  }

  /** `value` added to `field` in each hour of [from, to) (a snapshot field: at each UTC midnight of it). */
  addRange(key: StorageKey, from: number, to: number, field: Field, value: bigint): void {
    if (value !== 0n && from < to) this.addRangeAt(this.key(key), from, to, field, value);
  }

  /** add, to the key numbered `k` (key()). */
  addAt(k: number, hour: number, field: Field, value: bigint): void {
    if (value !== 0n) this.#push(k, hour, FIELD_INDEX.get(field)! | POINT, value);
  }

  /** addRange, to the key numbered `k` (key()). */
  addRangeAt(k: number, from: number, to: number, field: Field, value: bigint): void {
    if (value === 0n || from >= to) return;
    const f = FIELD_INDEX.get(field)!;
    this.#push(k, from, f, value);
    this.#push(k, to, f, -value);
  }

  /**
   * Maximal runs of hours whose quantities are equal, in key order then time; hours with none are
   * left out. A run ends at every hour where a level changes (even by nothing) and around each
   * single hour.
   */
  runs(): StorageRun[] {
    const n = this.#length;
    const hourOf = this.#hour;
    // The entries by key (counting sort, stable), then each key's by hour.
    const starts = new Int32Array(this.#keys.length + 1);
    for (let i = 0; i < n; i++) starts[this.#key[i]! + 1]!++;
    for (let k = 0; k < this.#keys.length; k++) starts[k + 1]! += starts[k]!;
    const order = new Int32Array(n);
    const next = starts.slice(0, this.#keys.length);
    for (let i = 0; i < n; i++) order[next[this.#key[i]!]!++] = i;
    const out: StorageRun[] = [];
    const level = new Array<bigint>(FIELDS.length).fill(0n);
    const point = new Array<bigint>(FIELDS.length).fill(0n);
    for (let k = 0; k < this.#keys.length; k++) {
      const key = this.#keys[k]!;
      const a = starts[k]!;
      const b = starts[k + 1]!;
      const mine = order.subarray(a, b);
      let ordered = true;
      for (let j = a + 1; j < b && ordered; j++) ordered = hourOf[order[j - 1]!]! <= hourOf[order[j]!]!;
      // Entries of one hour are summed: their order among them does not matter.
      if (!ordered) mine.sort((x, y) => hourOf[x]! - hourOf[y]!);
      level.fill(0n);
      let j = a;
      let at: number | undefined = a < b ? hourOf[order[a]!]! : undefined;
      while (at !== undefined) {
        point.fill(0n);
        let single = false;
        for (; j < b && hourOf[order[j]!]! === at; j++) {
          const i = order[j]!;
          const kind = this.#kind[i]!;
          const f = kind & ~POINT;
          if (kind === f) level[f] = level[f]! + this.#value.get(i);
          else {
            point[f] = point[f]! + this.#value.get(i);
            single = true;
          }
        }
        // The next cut: the hour after a single hour, else the next entry's hour (none: every level has ended).
        const to: number | undefined = single ? at + 1 : j < b ? hourOf[order[j]!]! : undefined;
        if (to !== undefined) {
          const from = at * HOUR;
          const hours = to - at;
          // A run holding no midnight has no snapshot.
          const midnight = from % DAY === 0 || Math.floor((from + hours * HOUR - 1) / DAY) > Math.floor(from / DAY);
          const run: StorageRun = { hour: from, hours, key };
          let any = false;
          for (let f = 0; f < FIELDS.length; f++) {
            const v = level[f]! + point[f]!;
            if (v === 0n || (!midnight && SNAPSHOT.has(FIELDS[f]!))) continue;
            run[FIELDS[f]!] = v;
            any = true;
          }
          if (any) out.push(run);
        }
        at = to;
      }
    }
    return out;
  }

  /** Every hour of every run: what the runs stand for. */
  rows(): StorageHour[] {
    const out: StorageHour[] = [];
    for (const { hours, ...run } of this.runs()) {
      for (let hour = run.hour; hour < run.hour + hours * HOUR; hour += HOUR) {
        const row: StorageHour = { hour, key: run.key };
        let any = false;
        for (const f of FIELDS) {
          if (run[f] === undefined || (SNAPSHOT.has(f) && hour % DAY !== 0)) continue;
          row[f] = run[f];
          any = true;
        }
        if (any) out.push(row);
      }
    }
    return out;
  }
}

/**
 * Byte-seconds of every hour of [start, end) and, at each UTC midnight, the snapshot: from the
 * opening live bytes at `start` and the delta rows of the month (StorageFeed.storageDeltas).
 * byte-seconds = open × 3600 + tailByteSeconds; the next hour opens at open + bytes. Between two
 * delta hours `open` is one level: a range, not an hour each.
 */
export function addLiveBytes(
  out: StorageHours,
  feed: { opening: readonly { key: StorageKey; bytes: bigint }[]; deltas: readonly StorageDeltaRow[] },
  start: number,
  end: number,
): void {
  // Per key (by out's number): its live bytes, the first hour they hold from, and the delta hour not
  // yet added (its bytes and tail summed over that hour's rows, so that rows of one hour are one change).
  const mine: number[] = [];
  const seen = new Set<number>();
  const open: bigint[] = [];
  const from: number[] = [];
  const pending: number[] = [];
  const pendingBytes: bigint[] = [];
  const pendingTail: bigint[] = [];
  // The runs in the order of the keys as given (openings, then deltas), whatever the hours of their changes.
  const index = (key: StorageKey) => {
    const k = out.key(key);
    if (!seen.has(k)) {
      seen.add(k);
      mine.push(k);
      open[k] = 0n;
      from[k] = start;
      pending[k] = -1;
      pendingBytes[k] = 0n;
      pendingTail[k] = 0n;
    }
    return k;
  };
  // Hours [from, hour] open at `open`; the delta hour adds its tail.
  const flush = (k: number) => {
    const hour = pending[k]!;
    if (hour < 0) return;
    out.addRangeAt(k, from[k]!, hour + HOUR, 'byteSeconds', open[k]! * BigInt(HOUR));
    out.addRangeAt(k, from[k]!, hour + HOUR, 'snapshotBytes', open[k]!);
    out.addAt(k, hour, 'byteSeconds', pendingTail[k]!);
    open[k] = open[k]! + pendingBytes[k]!;
    from[k] = hour + HOUR;
    pending[k] = -1;
    pendingBytes[k] = 0n;
    pendingTail[k] = 0n;
  };
  for (const o of feed.opening) {
    const k = index(o.key);
    open[k] = open[k]! + o.bytes;
  }
  const deltas = feed.deltas;
  // The port gives them by hour; any other order is put in it (stably) first.
  let ordered = true;
  for (let i = 1; i < deltas.length && ordered; i++) ordered = deltas[i - 1]!.hour <= deltas[i]!.hour;
  const rows = ordered ? deltas : [...deltas].sort((a, b) => a.hour - b.hour);
  for (const d of rows) {
    if (d.hour < start || d.hour >= end || d.hour % HOUR !== 0) throw new RangeError(`delta hour ${d.hour} is not a whole hour of [${start}, ${end})`);
    const k = index(d.key);
    if (pending[k] !== d.hour) flush(k);
    pending[k] = d.hour;
    pendingBytes[k] = pendingBytes[k]! + d.bytes;
    pendingTail[k] = pendingTail[k]! + d.tailByteSeconds;
  }
  for (const k of mine) {
    flush(k);
    out.addRangeAt(k, from[k]!, end, 'byteSeconds', open[k]! * BigInt(HOUR));
    out.addRangeAt(k, from[k]!, end, 'snapshotBytes', open[k]!);
  }
}

/** [from, to) cut where `value(hour)` changes: [start, end, value] of each piece. */
function* stretches<T>(from: number, to: number, changes: readonly { hour: number; value: T }[]): Generator<[number, number, T]> {
  for (let i = 0; i < changes.length; i++) {
    const a = Math.max(from, changes[i]!.hour);
    const b = Math.min(to, changes[i + 1]?.hour ?? Number.POSITIVE_INFINITY);
    if (a < b) yield [a, b, changes[i]!.value];
  }
}

/** Where `at(hour)` changes over the hours of [start, end): the hour and its new value. */
function changesOf<T>(at: (hour: number) => T, start: number, end: number): { hour: number; value: T }[] {
  const out: { hour: number; value: T }[] = [];
  for (let hour = start; hour < end; hour += HOUR) {
    const value = at(hour);
    if (out.length === 0 || out[out.length - 1]!.value !== value) out.push({ hour, value });
  }
  return out;
}

/**
 * Objects below the minimum size (versions of known size; parts and markers are no objects), over
 * [start, end): object-seconds and byte-seconds per hour, and at each UTC midnight the count and
 * bytes of those live then. `minimumAt(hour)`: the minimum of the plan version in force that hour
 * (0: none); the intervals come from StorageFeed.storageIntervals with `smallerThan` at least it.
 * The whole hours of an interval are ranges (cut where the minimum changes), its partial ones single hours.
 */
export function addSmallObjects(out: StorageHours, intervals: readonly StorageInterval[], minimumAt: (hour: number) => bigint, start: number, end: number): void {
  const minimums = changesOf(minimumAt, start, end);
  const minimum = (hour: number) => {
    let i = 0;
    while (i + 1 < minimums.length && minimums[i + 1]!.hour <= hour) i++;
    return minimums[i]!.value;
  };
  const seconds = (key: StorageKey, size: bigint, hour: number, n: number) => {
    if (n <= 0 || size >= minimum(hour)) return;
    out.add(key, hour, 'smallObjectSeconds', BigInt(n));
    out.add(key, hour, 'smallObjectByteSeconds', size * BigInt(n));
  };
  for (const v of intervals) {
    if (v.kind !== 'version' || v.size === null) continue;
    const size = v.size;
    const from = Math.max(v.start, start);
    const to = Math.min(v.end ?? end, end);
    if (from < to) {
      // The first hour when partial, whole hours, the last hour when partial.
      const first = from - (from % HOUR);
      let whole = from;
      if (from % HOUR !== 0 || to < first + HOUR) {
        seconds(v.key, size, first, Math.min(to, first + HOUR) - from);
        whole = first + HOUR;
      }
      const last = to - (to % HOUR);
      for (const [a, b, min] of stretches(whole, last, minimums)) {
        if (size >= min) continue;
        out.addRange(v.key, a, b, 'smallObjectSeconds', BigInt(HOUR));
        out.addRange(v.key, a, b, 'smallObjectByteSeconds', size * BigInt(HOUR));
      }
      if (to % HOUR !== 0 && last >= whole) seconds(v.key, size, last, to % HOUR);
    }
    // Midnights M with start < M <= end (the snapshot is the bytes open at M): [first, last + 1 hour) holds them.
    const firstMidnight = Math.max(v.start - (v.start % DAY) + DAY, start);
    const upto = v.end === null ? end - 1 : Math.min(v.end, end - 1);
    const lastMidnight = upto - (upto % DAY);
    for (const [a, b, min] of stretches(firstMidnight, lastMidnight + HOUR, minimums)) {
      if (size >= min) continue;
      out.addRange(v.key, a, b, 'snapshotSmallObjects', 1n);
      out.addRange(v.key, a, b, 'snapshotSmallObjectBytes', size);
    }
  }
}

/**
 * Versions ended in [start, end) younger than the minimum duration: billed to their creator for the
 * rest, on the hour they ended, as padded size × seconds left. `minimumAt(hour)` gives the plan
 * version's minimum duration (seconds) and minimum object size at that hour.
 */
export function addEarlyDeletes(
  out: StorageHours,
  intervals: readonly StorageInterval[],
  minimumAt: (hour: number) => { seconds: number; objectBytes: bigint },
  start: number,
  end: number,
): void {
  for (const v of intervals) {
    if (v.kind !== 'version' || v.size === null || v.end === null || v.end < start || v.end >= end) continue;
    const hour = v.end - (v.end % HOUR);
    const minimum = minimumAt(hour);
    const left = v.start + minimum.seconds - v.end;
    if (left <= 0) continue;
    // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
    const padded = v.size > minimum.objectBytes ? v.size : minimum.objectBytes;
    out.add(v.key, hour, 'earlyDeleteByteSeconds', padded * BigInt(left));
  }
}

/**
 * The highest live bytes of each UTC day of [start, end), over intervals of known size (versions and
 * parts: what the provider stores), exactly: live bytes change only at interval starts and ends,
 * so the peak of a day is the largest of its value at 00:00 and after each change within it.
 */
export function dailyPeaks(intervals: readonly StorageInterval[], start: number, end: number): Map<number, bigint> {
  const changes = new Map<number, bigint>();
  let live = 0n;
  for (const v of intervals) {
    if (v.size === null || v.size === 0n) continue;
    const s = v.start;
    const e = v.end ?? Number.POSITIVE_INFINITY;
    if (e <= s || e <= start || s >= end) continue;
    if (s <= start) live += v.size;
    else changes.set(s, (changes.get(s) ?? 0n) + v.size);
    if (e < end) changes.set(e, (changes.get(e) ?? 0n) - v.size);
  }
  const times = [...changes.keys()].sort((a, b) => a - b);
  const peaks = new Map<number, bigint>();
  let t = 0;
  for (let day = start; day < end; day += DAY) {
    // The changes at 00:00 itself come first: the value at 00:00 is after them.
    if (t < times.length && times[t] === day) live += changes.get(times[t++]!)!;
    let peak = live;
    while (t < times.length && times[t]! < day + DAY) {
      live += changes.get(times[t]!)!;
      if (live > peak) peak = live;
      t++;
    }
    if (peak > 0n) peaks.set(day, peak);
  }
  return peaks;
}
