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

/** A stable text of a storage key (a map key). */
export function storageKeyId(key: StorageKey): string {
  return [key.provider, key.bucket, key.customerId, key.featureId, key.clientType, key.clientId].map((v) => (v === null ? '\u0001' : v)).join('\u0000') + `\u0000${key.action}`;
}

/** Collects quantities per key × hour, adding into one StorageHour each. */
export class StorageHours {
  readonly #rows = new Map<string, StorageHour>();

  at(key: StorageKey, hour: number): StorageHour {
    const id = `${hour}\u0000${storageKeyId(key)}`;
    let row = this.#rows.get(id);
    if (row === undefined) {
      row = { hour, key };
      this.#rows.set(id, row);
    }
    return row;
  }

  add(key: StorageKey, hour: number, field: Exclude<keyof StorageHour, 'hour' | 'key'>, value: bigint): void {
    if (value === 0n) return;
    const row = this.at(key, hour);
    row[field] = (row[field] ?? 0n) + value;
  }

  rows(): StorageHour[] {
    return [...this.#rows.values()];
  }
}

/**
 * Byte-seconds of every hour of [start, end) and, at each UTC midnight, the snapshot: from the
 * opening live bytes at `start` and the delta rows of the month (StorageFeed.storageDeltas).
 * byte-seconds = open × 3600 + tailByteSeconds; the next hour opens at open + bytes.
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
    let next = 0;
    let hour = start;
    while (hour < end) {
      // Nothing live and no change before the next delta: skip to it.
      if (open === 0n) {
        if (next >= deltas.length) break;
        if (deltas[next]!.hour > hour) hour = deltas[next]!.hour;
      }
      let bytes = 0n;
      let tail = 0n;
      while (next < deltas.length && deltas[next]!.hour === hour) {
        bytes += deltas[next]!.bytes;
        tail += deltas[next]!.tailByteSeconds;
        next++;
      }
      out.add(key, hour, 'byteSeconds', open * BigInt(HOUR) + tail);
      if (hour % DAY === 0) out.add(key, hour, 'snapshotBytes', open);
      open += bytes;
      hour += HOUR;
    }
  }
}

/** The seconds of [from, to) in each hour it touches, in hour order. */
function* secondsPerHour(from: number, to: number): Generator<[hour: number, seconds: number]> {
  for (let hour = from - (from % HOUR); hour < to; hour += HOUR) {
    const seconds = Math.min(to, hour + HOUR) - Math.max(from, hour);
    if (seconds > 0) yield [hour, seconds];
  }
}

/**
 * Objects below the minimum size (versions of known size; parts and markers are no objects), over
 * [start, end): object-seconds and byte-seconds per hour, and at each UTC midnight the count and
 * bytes of those live then. `minimumAt(hour)`: the minimum of the plan version in force that hour
 * (0: none); the intervals come from StorageFeed.storageIntervals with `smallerThan` at least it.
 */
export function addSmallObjects(out: StorageHours, intervals: readonly StorageInterval[], minimumAt: (hour: number) => bigint, start: number, end: number): void {
  for (const v of intervals) {
    if (v.kind !== 'version' || v.size === null) continue;
    const size = v.size;
    const from = Math.max(v.start, start);
    const to = Math.min(v.end ?? end, end);
    for (const [hour, seconds] of secondsPerHour(from, to)) {
      if (size >= minimumAt(hour)) continue;
      out.add(v.key, hour, 'smallObjectSeconds', BigInt(seconds));
      out.add(v.key, hour, 'smallObjectByteSeconds', size * BigInt(seconds));
    }
    // Midnights M with start < M <= end (the snapshot is the bytes open at M).
    for (let m = Math.max(v.start - (v.start % DAY) + DAY, start); m < end && (v.end === null || m <= v.end); m += DAY) {
      if (size >= minimumAt(m)) continue;
      out.add(v.key, m, 'snapshotSmallObjects', 1n);
      out.add(v.key, m, 'snapshotSmallObjectBytes', size);
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
