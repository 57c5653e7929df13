/**
 * The storage feeder (src/costs/storage.ts) against a slow reference: generated inventories
 * (versions, parts and markers, some of unknown size, some live before the range and after it),
 * the StorageFeed answers built from them as the port documents, and every quantity computed again
 * from the intervals by the reference (reference.ts), hour by hour: byte-seconds, midnight snapshots, small objects, early
 * deletes and daily peaks, with the plan's minimums changing within the range.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { addEarlyDeletes, addLiveBytes, addSmallObjects, dailyPeaks, StorageHours, storageKeyId } from '../../src/costs/storage.js';
import type { StorageDeltaRow, StorageInterval, StorageKey } from '../../src/store/types.js';
import { referencePeaks, referenceStorage } from './reference.js';

const H = 3600;
const D = 86400;
const S = Date.parse('2026-03-01T00:00:00Z') / 1000;
const E = S + 4 * D;
/** The plan changes in the middle of the range: minimum size and duration. */
const CHANGE = S + 2 * D;
const minimumBytes = (t: number) => (t < CHANGE ? 4096n : 1000n);
const minimumSeconds = (t: number) => (t < CHANGE ? D : 2 * D);

const keyArb: fc.Arbitrary<StorageKey> = fc.record({
  provider: fc.constant('wasabi'),
  bucket: fc.constantFrom('b1', 'b2'),
  customerId: fc.constantFrom('c1', 'c2', null),
  featureId: fc.constant(null),
  clientType: fc.constant(null),
  clientId: fc.constantFrom('d1', null),
  action: fc.constantFrom('PutObject' as const, 'CopyObject' as const),
});

const intervalArb: fc.Arbitrary<StorageInterval> = fc
  .record({
    kind: fc.constantFrom('version' as const, 'version' as const, 'part' as const, 'marker' as const),
    key: keyArb,
    size: fc.oneof(fc.bigInt({ min: 0n, max: 5000n }), fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.constant(null)),
    // Whole hours, midnights and odd seconds, from two days before the range to after it.
    start: fc.oneof(fc.integer({ min: S - 2 * D, max: E + H }), fc.integer({ min: -2, max: 5 }).map((d) => S + d * D), fc.integer({ min: -48, max: 100 }).map((h) => S + h * H)),
    length: fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 3 * D }), fc.integer({ min: 0, max: 72 }).map((h) => h * H)),
  })
  .map(({ kind, key, size, start, length }) => ({
    kind,
    key,
    objectKey: 'k',
    versionId: null,
    size: kind === 'marker' ? null : size,
    start,
    end: length === null ? null : start + length,
    createdBy: 'e1',
    endedBy: length === null ? null : 'e2',
  }));

/** What StorageFeed.storageDeltas answers for [S, E), built as the port documents it. */
function feedOf(intervals: StorageInterval[]): { opening: { key: StorageKey; bytes: bigint }[]; deltas: StorageDeltaRow[] } {
  const opening = new Map<string, { key: StorageKey; bytes: bigint }>();
  const deltas = new Map<string, StorageDeltaRow>();
  const delta = (key: StorageKey, t: number, bytes: bigint) => {
    const hour = t - (t % H);
    const id = `${hour}|${storageKeyId(key)}`;
    const row = deltas.get(id) ?? { hour, key, bytes: 0n, tailByteSeconds: 0n };
    deltas.set(id, { ...row, bytes: row.bytes + bytes, tailByteSeconds: row.tailByteSeconds + bytes * BigInt(hour + H - t) });
  };
  for (const v of intervals) {
    if (v.size === null) continue;
    if (v.start < S && (v.end === null || v.end >= S)) {
      const o = opening.get(storageKeyId(v.key)) ?? { key: v.key, bytes: 0n };
      opening.set(storageKeyId(v.key), { ...o, bytes: o.bytes + v.size });
    }
    if (v.start >= S && v.start < E) delta(v.key, v.start, v.size);
    if (v.end !== null && v.end >= S && v.end < E) delta(v.key, v.end, -v.size);
  }
  return { opening: [...opening.values()].filter((o) => o.bytes !== 0n), deltas: [...deltas.values()].sort((a, b) => a.hour - b.hour) };
}

type Totals = Map<string, bigint>;
const add = (m: Totals, id: string, value: bigint) => {
  if (value !== 0n) m.set(id, (m.get(id) ?? 0n) + value);
};

function reference(intervals: StorageInterval[]): Totals {
  const out: Totals = new Map();
  for (const row of referenceStorage(intervals, S, E, minimumBytes, minimumSeconds).values()) {
    const { hour, key, ...fields } = row;
    for (const [field, value] of Object.entries(fields)) add(out, `${hour}|${storageKeyId(key)}|${field}`, value as bigint);
  }
  return out;
}

function feederTotals(intervals: StorageInterval[]): Totals {
  const hours = new StorageHours();
  addLiveBytes(hours, feedOf(intervals), S, E);
  // What storageIntervals would answer for each filter: alive in [S, E), smaller than, ended younger than.
  // As the service asks: alive in [S - 1, E), so that one ended at S itself is in the snapshot at S.
  const alive = intervals.filter((v) => v.start < E && (v.end === null || v.end > S - 1));
  addSmallObjects(hours, alive.filter((v) => v.size !== null && v.size < 4096n), minimumBytes, S, E);
  addEarlyDeletes(hours, intervals.filter((v) => v.end !== null && v.end >= S && v.end < E && v.end - v.start < 2 * D), (hour) => ({ seconds: minimumSeconds(hour), objectBytes: minimumBytes(hour) }), S, E);
  const out: Totals = new Map();
  for (const row of hours.rows()) {
    const { hour, key, ...fields } = row;
    for (const [field, value] of Object.entries(fields)) add(out, `${hour}|${storageKeyId(key)}|${field}`, value as bigint);
  }
  return out;
}

const sorted = (m: Map<string | number, bigint>) => Object.fromEntries([...m].map(([k, v]) => [String(k), String(v)]).sort());

describe('storage feeder', () => {
  it('equals the second-by-second reference for generated inventories', () => {
    fc.assert(
      fc.property(fc.array(intervalArb, { maxLength: 25 }), (intervals) => {
        assert.deepEqual(sorted(feederTotals(intervals)), sorted(reference(intervals)));
        assert.deepEqual(sorted(dailyPeaks(intervals.filter((v) => v.start < E && (v.end === null || v.end > S)), S, E)), sorted(referencePeaks(intervals, S, E)));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps bytes across hours with no change, and a key live all month without any delta', () => {
    const key: StorageKey = { provider: 'aws', bucket: 'b', customerId: 'acme', featureId: null, clientType: null, clientId: null, action: 'PutObject' };
    const hours = new StorageHours();
    addLiveBytes(hours, { opening: [{ key, bytes: 100n }], deltas: [] }, S, S + 2 * D);
    const rows = hours.rows();
    assert.equal(rows.length, 48);
    assert.ok(rows.every((r) => r.byteSeconds === 360_000n));
    assert.deepEqual(rows.filter((r) => r.snapshotBytes !== undefined).map((r) => [r.hour - S, r.snapshotBytes]), [[0, 100n], [D, 100n]]);
  });

  it('peaks: an overwrite at one instant is not counted twice; a change at 00:00 belongs to its day', () => {
    const key: StorageKey = { provider: 'cloudflare', bucket: 'b', customerId: null, featureId: null, clientType: null, clientId: null, action: 'PutObject' };
    const v = (start: number, end: number | null, size: bigint): StorageInterval => ({ kind: 'version', key, objectKey: 'k', versionId: null, size, start, end, createdBy: 'a', endedBy: null });
    const peaks = dailyPeaks([v(S - 10, S + D, 500n), v(S + D, null, 100n), v(S + 5 * H, S + 6 * H, 1000n)], S, S + 3 * D);
    assert.deepEqual(sorted(peaks), sorted(new Map([[S, 1500n], [S + D, 100n], [S + 2 * D, 100n]])));
  });
});
