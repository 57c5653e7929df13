/** fast-check arbitraries of one account-month of quantities, for every shipped plan. */
import fc from 'fast-check';
import { loadPriceBook } from '../../src/pricing/catalogue.js';
import type { PricePlan } from '../../src/pricing/plan.js';
import type { AccountMonth, Attribution, KeyHour } from '../../src/pricing/quantities.js';
import type { ActionName } from '../../src/events/catalogue.js';

export const BOOK = loadPriceBook();
export const PLAN_IDS = [...BOOK.plans.keys()];
const MONTHS = ['2026-02', '2026-05', '2026-07', '2026-11'];
const ACTIONS: ActionName[] = ['GetObject', 'PutObject', 'ListObjectsV2', 'HeadObject', 'DeleteObject', 'CopyObject', 'UploadPart'];

/**
 * A version in force from the 15th with other prices and allowances 1,000 times smaller, so that
 * every month also switches version and crosses free allowances with modest quantities.
 */
function midMonthVersion(base: PricePlan, month: string): PricePlan {
  const bump = (p: string) => (p.includes('.') ? `${p}7` : `${p}.7`);
  const shrink = (n: number | undefined) => (n === undefined ? undefined : Math.max(1, Math.floor(n / 1000)));
  return {
    ...base,
    validFrom: `${month}-15`,
    storage: { ...base.storage, tiers: base.storage.tiers.map((t) => ({ ...t, pricePerGbMonth: bump(t.pricePerGbMonth) })) },
    requests: {
      ...base.requests,
      classes: Object.fromEntries(Object.entries(base.requests.classes).map(([k, c]) => [k, { ...c, price: bump(c.price), freePerDay: shrink(c.freePerDay), freePerMonth: shrink(c.freePerMonth) }])),
    },
    egress: { ...base.egress, tiers: base.egress.tiers.map((t) => ({ ...t, pricePerGb: bump(t.pricePerGb) })) },
  };
}

const big = (max: bigint) => fc.oneof(fc.constant(0n), fc.bigInt({ min: 0n, max: max / 1_000_000n }), fc.bigInt({ min: 0n, max }));

const keyArb: fc.Arbitrary<Attribution> = fc.record({
  customerId: fc.constantFrom('acme', 'globex', 'initech', null),
  featureId: fc.constantFrom('upload', 'thumbs', null),
  clientType: fc.constantFrom('web', 'ios', null),
  clientId: fc.constantFrom('c1', 'c2', null),
  bucket: fc.constantFrom('media', 'logs'),
  action: fc.constantFrom(...ACTIONS),
});

function keyHourArb(start: number, hours: number): fc.Arbitrary<KeyHour> {
  const hourArb = fc.oneof(fc.nat(hours - 1), fc.nat(hours / 24 - 1).map((d) => d * 24)).map((i) => start + i * 3600);
  return fc
    .record({
      hour: hourArb,
      key: keyArb,
      requests: fc.oneof(fc.constant(0), fc.nat(3000)),
      egressBytes: big(10n ** 14n),
      byteSeconds: big(10n ** 24n),
      smallObjectSeconds: big(10n ** 9n),
      smallSize: fc.nat(4095),
      snapshotBytes: big(10n ** 15n),
      snapshotSmallObjects: big(10n ** 6n),
      earlyDeleteByteSeconds: big(10n ** 20n),
    })
    .map(({ smallSize, ...q }) => ({
      ...q,
      // small objects are below 4 KiB each, and part of the live bytes
      smallObjectByteSeconds: q.smallObjectSeconds * BigInt(smallSize),
      byteSeconds: q.byteSeconds + q.smallObjectSeconds * BigInt(smallSize),
      snapshotSmallObjectBytes: q.snapshotSmallObjects * BigInt(smallSize),
      snapshotBytes: q.snapshotBytes + q.snapshotSmallObjects * BigInt(smallSize),
    }));
}

export const accountMonthArb: fc.Arbitrary<AccountMonth & { planId: string }> = fc
  .record({ planId: fc.constantFrom(...PLAN_IDS), month: fc.constantFrom(...MONTHS), switchMidMonth: fc.boolean(), monthComplete: fc.boolean() })
  .chain(({ planId, month, switchMidMonth, monthComplete }) => {
    const [y, m] = month.split('-').map(Number) as [number, number];
    const start = Date.UTC(y, m - 1, 1) / 1000;
    const hours = (Date.UTC(y, m, 1) / 1000 - start) / 3600;
    const shipped = BOOK.plans.get(planId)!;
    const versions = switchMidMonth ? [...shipped, midMonthVersion(shipped[shipped.length - 1]!, month)] : [...shipped];
    return fc
      .record({
        quantities: fc.uniqueArray(keyHourArb(start, hours), { maxLength: 40, selector: (q) => `${q.hour}|${JSON.stringify(q.key)}` }),
        peaks: fc.array(fc.tuple(fc.nat(hours / 24 - 1), big(10n ** 13n)), { maxLength: 20 }),
      })
      .map(({ quantities, peaks }) => ({
        planId,
        month,
        versions,
        monthComplete,
        quantities,
        dailyPeakBytes: new Map(peaks.map(([d, b]) => [start + d * 86400, b])),
      }));
  });

/**
 * An account-month plus runs: storage quantities repeated over up to the whole month (bucket
 * `archive`, which keyHourArb never uses, so a run's hours are no other quantity's), large enough
 * to cross tiers within a run.
 */
export const accountMonthWithRunsArb: fc.Arbitrary<AccountMonth & { planId: string }> = accountMonthArb.chain((input) => {
  const [y, m] = input.month.split('-').map(Number) as [number, number];
  const start = Date.UTC(y, m - 1, 1) / 1000;
  const hours = (Date.UTC(y, m, 1) / 1000 - start) / 3600;
  const runArb = fc
    .record({
      from: fc.oneof(fc.nat(hours - 1), fc.constant(0), fc.nat(hours / 24 - 1).map((d) => d * 24)),
      length: fc.oneof(fc.integer({ min: 1, max: hours }), fc.constant(hours), fc.integer({ min: 1, max: 48 })),
      key: keyArb.map((k) => ({ ...k, bucket: 'archive' })),
      byteSeconds: fc.oneof(big(10n ** 18n), big(10n ** 24n)),
      smallObjectSeconds: big(10n ** 9n),
      smallSize: fc.nat(4095),
      snapshotBytes: fc.oneof(big(10n ** 12n), big(10n ** 16n)),
      snapshotSmallObjects: big(10n ** 6n),
    })
    .map(({ from, length, smallSize, ...q }): KeyHour => ({
      ...q,
      hour: start + from * 3600,
      hours: Math.min(length, hours - from),
      smallObjectByteSeconds: q.smallObjectSeconds * BigInt(smallSize),
      byteSeconds: q.byteSeconds + q.smallObjectSeconds * BigInt(smallSize),
      snapshotSmallObjectBytes: q.snapshotSmallObjects * BigInt(smallSize),
      snapshotBytes: q.snapshotBytes + q.snapshotSmallObjects * BigInt(smallSize),
    }));
  return fc.uniqueArray(runArb, { minLength: 1, maxLength: 4, selector: (r) => JSON.stringify(r.key) }).map((runs) => ({ ...input, quantities: [...input.quantities, ...runs] }));
});

/** Each run as its hours: what it stands for (snapshot quantities only at midnights). */
export function hourByHour(input: AccountMonth): AccountMonth {
  const quantities: KeyHour[] = [];
  for (const { hours = 1, ...q } of input.quantities) {
    for (let k = 0; k < hours; k++) {
      const hour = q.hour + k * 3600;
      const snapshot = hour % 86400 === 0;
      quantities.push({ ...q, hour, ...(snapshot ? {} : { snapshotBytes: undefined, snapshotSmallObjects: undefined, snapshotSmallObjectBytes: undefined }) });
    }
  }
  return { ...input, quantities };
}
