/**
 * Stored-bytes routing (planStorage): which delta shapes answer, and that a plan's spans cover each
 * window's hours, and the opening's, exactly once and nothing else, for any windows and dimensions.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { OPENING_FROM, planStorage, storageShapeFor } from '../../src/inventory/shapes.js';
import type { StorageTerm } from '../../src/inventory/shapes.js';
import { DIMENSIONS } from '../../src/usage/shapes.js';
import type { Dimension } from '../../src/usage/shapes.js';

const H = Date.parse('2026-03-01T00:00:00Z') / 3_600_000;

/** Each span's hours, as [window, hour] counts; the opening's from a day before `from` on (what the test windows can reach). */
function coverage(terms: StorageTerm[], from: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { shape, spans } of terms) {
    const unit = shape.grain === 'day' ? 24 : 1;
    for (const span of spans) {
      for (let h = Math.max(span.from * unit, from); h < span.to * unit; h++) counts.set(`${span.window}/${h}`, (counts.get(`${span.window}/${h}`) ?? 0) + 1);
    }
  }
  return counts;
}

describe('storage routing (planStorage)', () => {
  it('reads the cheapest shape keeping every dimension asked for', () => {
    assert.equal(storageShapeFor([])!.name, 'tenant');
    assert.equal(storageShapeFor(['provider', 'action'])!.name, 'tenant');
    assert.equal(storageShapeFor(['bucket'])!.name, 'bucket');
    assert.equal(storageShapeFor(['customerId'])!.name, 'customer');
    assert.equal(storageShapeFor(['customerId', 'action'])!.name, 'fine');
    assert.equal(storageShapeFor(['customerId'], 'day')!.name, 'customer_day');
    assert.equal(storageShapeFor(['clientId'], 'day'), undefined);
  });

  it('takes whole UTC days from a day shape and the hours around them from an hourly one, never more', () => {
    // 30 UTC days: the days, and the opening's days up to the first.
    assert.deepEqual(planStorage(['customerId'], [H, H + 720]).map((t) => [t.shape.name, t.spans]), [
      ['customer_day', [{ window: -1, from: OPENING_FROM / 24, to: H / 24, end: H }, { window: 0, from: H / 24, to: H / 24 + 30, end: H + 720 }]],
    ]);
    // Berlin days in winter (23:00 UTC): no whole UTC day inside either, so hours; the opening's last 23 hours too.
    assert.deepEqual(planStorage([], [H - 1, H + 23, H + 47]).map((t) => [t.shape.name, t.spans.map((s) => [s.window, s.from, s.to])]), [
      ['tenant_day', [[-1, OPENING_FROM / 24, H / 24 - 1]]],
      ['tenant', [[-1, H - 24, H - 1], [0, H - 1, H + 23], [1, H + 23, H + 47]]],
    ]);
    // A dimension no day shape keeps: hours only, from the full shape.
    assert.deepEqual(planStorage(['clientId'], [H, H + 48]).map((t) => t.shape.name), ['fine']);
  });

  it('covers each window and the opening hour by hour exactly once, whatever the bounds and dimensions', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: -100, max: 200 }), { minLength: 2, maxLength: 6 }),
        fc.subarray([...DIMENSIONS]),
        (offsets, needed: Dimension[]) => {
          const bounds = offsets.sort((a, b) => a - b).map((o) => H + o);
          const from = bounds[0]! - 48;
          const want = new Map<string, number>();
          for (let h = from; h < bounds[0]!; h++) want.set(`-1/${h}`, 1);
          for (let w = 0; w + 1 < bounds.length; w++) for (let h = bounds[w]!; h < bounds[w + 1]!; h++) want.set(`${w}/${h}`, 1);
          const terms = planStorage(needed, bounds);
          assert.deepEqual(coverage(terms, from), want);
          for (const { spans } of terms) for (const s of spans) assert.equal(s.end, s.window === -1 ? bounds[0] : bounds[s.window + 1]);
        },
      ),
    );
  });
});
