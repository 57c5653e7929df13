/**
 * Query routing (planUsage): which shapes answer, and that a plan's signed spans cover each window's
 * hours exactly once, for every zone and granularity, whatever the edges.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DIMENSIONS, GRAIN_HOURS, directWindows, planUsage } from '../../src/usage/shapes.js';
import type { Dimension, UsageTerm } from '../../src/usage/shapes.js';
import { windowBounds } from '../../src/usage/windows.js';
import type { Granularity } from '../../src/usage/windows.js';

const hour = (iso: string) => Date.parse(iso) / 3_600_000;
const FROM = hour('2026-03-01T00:00:00Z');
const TO = hour('2026-04-01T00:00:00Z');

/** Per window, how many times each hour is counted (sign included): each window's own hours once, nothing else. */
function coverage(terms: UsageTerm[], windows: number): Map<number, number>[] {
  const counts = Array.from({ length: windows }, () => new Map<number, number>());
  for (const term of terms) {
    const unit = GRAIN_HOURS[term.shape.grain];
    for (const span of term.spans) {
      for (let h = span.from * unit; h < span.to * unit; h++) counts[span.window]!.set(h, (counts[span.window]!.get(h) ?? 0) + span.sign);
    }
  }
  return counts;
}

function assertExact(terms: UsageTerm[], bounds: number[]): void {
  const counts = coverage(terms, bounds.length - 1);
  counts.forEach((hours, w) => {
    for (const [h, n] of hours) assert.equal(n, h >= bounds[w]! && h < bounds[w + 1]! ? 1 : 0, `window ${w} counts hour ${h} ${n} times`);
    for (let h = bounds[w]!; h < bounds[w + 1]!; h++) assert.equal(hours.get(h), 1, `window ${w} misses hour ${h}`);
  });
}

const names = (terms: UsageTerm[]) => terms.map((t) => t.shape.name);

describe('planUsage', () => {
  it('reads whole UTC days from a day shape, and hours only where a window has edges', () => {
    const days = windowBounds(FROM, TO, 'day', 'UTC');
    assert.deepEqual(names(planUsage(['customerId'], days)), ['customer_day']);
    const berlin = windowBounds(FROM, TO, 'day', 'Europe/Berlin');
    const plan = planUsage(['customerId'], berlin);
    assert.deepEqual(names(plan), ['customer_day', 'customer_hour']);
    // A Berlin day in March before DST: one UTC day, plus the UTC hour before it, minus its own last hour.
    assert.deepEqual(plan[0]!.spans[1], { window: 1, from: FROM / 24 + 1, to: FROM / 24 + 2, sign: 1 });
    assert.deepEqual(
      plan[1]!.spans.filter((s) => s.window === 1),
      [
        { window: 1, from: FROM + 23, to: FROM + 24, sign: 1 },
        { window: 1, from: FROM + 47, to: FROM + 48, sign: -1 },
      ],
    );
    assertExact(plan, berlin);
  });

  it('routes each dimension set to the narrowest shapes that keep it', () => {
    const month = [FROM, TO];
    const cases: [Dimension[], string[]][] = [
      [[], ['tenant_day']],
      [['provider', 'action'], ['tenant_day']],
      [['customerId', 'featureId', 'action'], ['feature_day']],
      [['clientId', 'customerId'], ['client_day']],
      // No shape keeps these: the events, by the hour.
      [['customerId', 'provider'], ['events']],
      [['bucket'], ['events']],
      [['clientType', 'clientId'], ['events']],
    ];
    for (const [needed, expected] of cases) assert.deepEqual(names(planUsage(needed, month)), expected, needed.join(','));
    // Edge hours of a client_day answer come from the events (no hourly shape keeps clientId), as do
    // those of feature_day (none keeps featureId): only the edges, the days from the day shape.
    for (const [needed, day] of [[['clientId'], 'client_day'], [['customerId', 'featureId'], 'feature_day']] as const) {
      const plan = planUsage(needed, [FROM + 5, TO - 3]);
      assert.deepEqual(names(plan), [day, 'events']);
      assert.deepEqual(plan[1]!.spans, [
        { window: 0, from: FROM, to: FROM + 5, sign: -1 },
        { window: 0, from: TO - 3, to: TO, sign: -1 },
      ]);
    }
    // Hourly windows of what an hourly shape keeps are read from it, never from the events.
    assert.deepEqual(names(planUsage(['customerId'], windowBounds(FROM, TO, 'hour', 'UTC'))), ['customer_hour']);
    assert.deepEqual(names(planUsage(['featureId'], windowBounds(FROM, TO, 'hour', 'UTC'))), ['events']);
    // Hourly windows, and windows shorter than their edges, are read by the hour.
    assert.deepEqual(names(planUsage([], windowBounds(FROM, TO, 'hour', 'UTC'))), ['tenant']);
    assert.deepEqual(names(planUsage(['customerId'], [FROM + 20, FROM + 28])), ['customer_hour']);
  });

  it('answers a window in Asia/Kolkata (granularity none, edges at whole UTC hours) from days and edge hours', () => {
    const bounds = windowBounds(hour('2026-03-01T18:00:00Z'), hour('2026-03-09T06:00:00Z'), 'none', 'Asia/Kolkata');
    const plan = planUsage(['customerId'], bounds);
    assert.deepEqual(names(plan), ['customer_day', 'customer_hour']);
    assertExact(plan, bounds);
  });

  it('covers every window exactly, for any zone, granularity and whole-hour range', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 24 * 80 }),
        fc.integer({ min: 1, max: 24 * 40 }),
        fc.constantFrom<Granularity>('hour', 'day', 'month', 'none'),
        fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', 'Pacific/Auckland', 'Asia/Tokyo'),
        fc.constantFrom<Dimension[]>([], ['customerId'], ['customerId', 'featureId', 'action'], ['clientId'], ['bucket']),
        (start, length, granularity, zone, needed) => {
          const bounds = windowBounds(FROM + start, FROM + start + length, granularity, zone);
          assertExact(planUsage(needed, bounds), bounds);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('directWindows', () => {
  const plan = (groupBy: Dimension[], granularity: Granularity, timeZone = 'UTC', filters: Dimension[] = []) => {
    const bounds = windowBounds(FROM, TO, granularity, timeZone);
    return { terms: planUsage([...groupBy, ...filters], bounds), bounds };
  };

  it('reads window w from unit first + w when every row is one answer row (UTC days by customer)', () => {
    const { terms, bounds } = plan(['customerId'], 'day');
    const direct = directWindows(terms, ['customerId'], {});
    assert.ok(direct);
    assert.equal(direct.count, bounds.length - 1);
    for (let w = 0; w < direct.count; w++) assert.equal(bounds[w]!, (direct.first + w) * 24);
  });

  it('is refused where rows must be summed: a window of several units, edge hours, a dimension summed away', () => {
    assert.equal(directWindows(plan(['customerId'], 'none').terms, ['customerId'], {}), undefined);
    assert.equal(directWindows(plan(['customerId'], 'day', 'Europe/Berlin').terms, ['customerId'], {}), undefined);
    assert.equal(directWindows(plan([], 'hour').terms, [], {}), undefined);
    assert.equal(directWindows(plan(['customerId'], 'day', 'UTC', ['featureId']).terms, ['customerId'], { featureId: ['f1', 'f2'] }), undefined);
    // The events: every dimension grouped, one hour a window, still many rows per key.
    const hours = windowBounds(FROM, FROM + 24, 'hour', 'UTC');
    const events = planUsage(DIMENSIONS, hours);
    assert.deepEqual(names(events), ['events']);
    assert.equal(directWindows(events, DIMENSIONS, {}), undefined);
  });

  it('takes a dimension filtered to one value as fixed: the clients of one customer by day', () => {
    const { terms } = plan(['clientId'], 'day', 'UTC', ['customerId']);
    assert.equal(terms[0]!.shape.name, 'client_day');
    assert.ok(directWindows(terms, ['clientId'], { customerId: ['cus_1'] }));
    assert.equal(directWindows(terms, ['clientId'], { customerId: ['cus_1', 'cus_2'] }), undefined);
  });
});
