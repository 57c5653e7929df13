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
type Fields = Partial<Record<Field, bigint>>;
const FIELDS: readonly Field[] = ['byteSeconds', 'snapshotBytes', 'smallObjectSeconds', 'smallObjectByteSeconds', 'snapshotSmallObjects', 'snapshotSmallObjectBytes', 'earlyDeleteByteSeconds'];
const SNAPSHOT = new Set<Field>(['snapshotBytes', 'snapshotSmallObjects', 'snapshotSmallObjectBytes']);

const addTo = (m: Map<number, Fields>, hour: number, field: Field, value: bigint) => {
  let f = m.get(hour);
  if (f === undefined) {
    f = {};
    m.set(hour, f);
  }
  f[field] = (f[field] ?? 0n) + value;
};

/** Texts already made, by key object: a key's first row's object is the one its later steps pass. */
const keyIds = new WeakMap<StorageKey, string>();

/** A stable text of a storage key (a map key). */
export function storageKeyId(key: StorageKey): string {
  let id = keyIds.get(key);
  if (id === undefined) {
    id = [key.provider, key.bucket, key.customerId, key.featureId, key.clientType, key.clientId].map((v) => (v === null ? '\u0001' : v)).join('\u0000') + `\u0000${key.action}`;
    keyIds.set(key, id);
  }
  return id;
}

/**
 * Collects quantities per key as piecewise constant levels (`addRange`) plus single hours (`add`):
 * a key's live bytes only change where it has deltas, so its runs number its changes, not its hours.
 */
export class StorageHours {
  readonly #keys = new Map<string, { key: StorageKey; levels: Map<number, Fields>; points: Map<number, Fields> }>();

  #entry(key: StorageKey) {
    const id = storageKeyId(key);
    let e = this.#keys.get(id);
    if (e === undefined) {
      e = { key, levels: new Map(), points: new Map() };
      this.#keys.set(id, e);
    }
    return e;
  }

  /** `value` added to `field` in the one hour `hour`. */
  add(key: StorageKey, hour: number, field: Field, value: bigint): void {
    if (value !== 0n) addTo(this.#entry(key).points, hour, field, value);
  }

  /** `value` added to `field` in each hour of [from, to) (a snapshot field: at each UTC midnight of it). */
  addRange(key: StorageKey, from: number, to: number, field: Field, value: bigint): void {
    if (value === 0n || from >= to) return;
    const e = this.#entry(key);
    addTo(e.levels, from, field, value);
    addTo(e.levels, to, field, -value);
  }

  /** Maximal runs of hours whose quantities are equal, in key order then time; hours with none are left out. */
  runs(): StorageRun[] {
    const out: StorageRun[] = [];
    for (const { key, levels, points } of this.#keys.values()) {
      const cuts = new Set<number>(levels.keys());
      for (const h of points.keys()) cuts.add(h).add(h + HOUR);
      const sorted = [...cuts].sort((a, b) => a - b);
      const level: Fields = {};
      for (let i = 0; i + 1 < sorted.length; i++) {
        const from = sorted[i]!;
        for (const [f, v] of Object.entries(levels.get(from) ?? {}) as [Field, bigint][]) level[f] = (level[f] ?? 0n) + v;
        const hours = (sorted[i + 1]! - from) / HOUR;
        // A run holding no midnight has no snapshot.
        const midnight = from % DAY === 0 || Math.floor((from + hours * HOUR - 1) / DAY) > Math.floor(from / DAY);
        const run: StorageRun = { hour: from, hours, key };
        let any = false;
        const point = points.get(from);
        for (const f of FIELDS) {
          const v = (level[f] ?? 0n) + (point?.[f] ?? 0n);
          if (v === 0n || (SNAPSHOT.has(f) && !midnight)) continue;
          run[f] = v;
          any = true;
        }
        if (any) out.push(run);
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
  const keys = new Map<string, { key: StorageKey; open: bigint; deltas: StorageDeltaRow[] }>();
  const entry = (key: StorageKey) => {
    const id = storageKeyId(key);
    let e = keys.get(id);
    if (e === undefined) {
      e = { key, open: 0n, deltas: [] };
      keys.set(id, e);
    }
    return e;
  };
  for (const o of feed.opening) entry(o.key).open += o.bytes;
  for (const d of feed.deltas) {
    if (d.hour < start || d.hour >= end || d.hour % HOUR !== 0) throw new RangeError(`delta hour ${d.hour} is not a whole hour of [${start}, ${end})`);
    entry(d.key).deltas.push(d);
  }
  for (const { key, open: opening, deltas } of keys.values()) {
    deltas.sort((a, b) => a.hour - b.hour);
    let open = opening;
    let from = start;
    for (let next = 0; next < deltas.length; ) {
      const hour = deltas[next]!.hour;
      let bytes = 0n;
      let tail = 0n;
      for (; next < deltas.length && deltas[next]!.hour === hour; next++) {
        bytes += deltas[next]!.bytes;
        tail += deltas[next]!.tailByteSeconds;
      }
      // Hours [from, hour] open at `open`; the delta hour adds its tail.
      out.addRange(key, from, hour + HOUR, 'byteSeconds', open * BigInt(HOUR));
      out.addRange(key, from, hour + HOUR, 'snapshotBytes', open);
      out.add(key, hour, 'byteSeconds', tail);
      open += bytes;
      from = hour + HOUR;
    }
    out.addRange(key, from, end, 'byteSeconds', open * BigInt(HOUR));
    out.addRange(key, from, end, 'snapshotBytes', open);
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
