/**
 * Storage measures of /v1/usage from per-hour deltas. Each delta row at hour h holds Σ±size
 * (bytes) and Σ±size × (h + 1h − t) (tail), so with `open` the live bytes at a window's start
 * [s, e): byte-seconds = open × (e − s) + Σtail + Σbytes × (e − h − 1h) over the window's rows, and
 * the next window opens at open + Σbytes. The counts (objects, markers, ...) are levels the same way.
 */
import type { StorageWindowSums, UsageStoreRow } from '../store/types.js';

/** In this order after the request measures; storedByteHours is carried as byte-seconds (format.ts divides). */
export const STORAGE_MEASURES = ['storedByteHours', 'storedBytes', 'objects', 'deleteMarkers', 'unknownSizeObjects', 'incompleteUploadBytes'] as const;

/** Folds a store's window sums into one row per window and group (every group, every window: levels carry on). */
export function foldStorage(bounds: readonly number[], sums: readonly StorageWindowSums[]): UsageStoreRow[] {
  const windows = bounds.length - 1;
  const groups = new Map<string, { values: (string | null)[]; open: bigint[]; byWindow: (bigint[] | undefined)[] }>();
  for (const s of sums) {
    const key = JSON.stringify(s.values);
    let g = groups.get(key);
    if (g === undefined) {
      g = { values: s.values, open: [0n, 0n, 0n, 0n, 0n], byWindow: new Array(windows) };
      groups.set(key, g);
    }
    if (s.window === -1) {
      // Levels only: bytes, objects, markers, unknown, partBytes.
      const [bytes, , , objects, markers, unknown, parts] = s.sums;
      g.open = [bytes!, objects!, markers!, unknown!, parts!];
    } else {
      g.byWindow[s.window] = s.sums;
    }
  }
  const rows: UsageStoreRow[] = [];
  for (const g of groups.values()) {
    const level = [...g.open];
    for (let w = 0; w < windows; w++) {
      const s = g.byWindow[w];
      const seconds = BigInt((bounds[w + 1]! - bounds[w]!) * 3600);
      let byteSeconds = level[0]! * seconds;
      if (s !== undefined) {
        const [bytes, tail, bytesHoursLeft, objects, markers, unknown, parts] = s;
        byteSeconds += tail! + bytesHoursLeft! * 3600n;
        level[0]! += bytes!;
        level[1]! += objects!;
        level[2]! += markers!;
        level[3]! += unknown!;
        level[4]! += parts!;
      }
      rows.push({ window: w, values: g.values, measures: [byteSeconds, level[0]!, level[1]!, level[2]!, level[3]!, level[4]!] });
    }
  }
  return rows;
}

/** Byte-seconds as byte-hours: the exact quotient, rounded half up once to 6 decimal places. */
export function byteHours(byteSeconds: bigint): string {
  const negative = byteSeconds < 0n;
  const abs = negative ? -byteSeconds : byteSeconds;
  const micro = (abs * 1_000_000n + 1800n) / 3600n;
  const whole = micro / 1_000_000n;
  const frac = (micro % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${frac === '' ? '' : `.${frac}`}`;
}
