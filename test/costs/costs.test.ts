/**
 * GET /v1/costs (requests and egress; stored bytes are storage-costs.test.ts's) against the
 * reference (reference.ts): generated usage on
 * every provider's plan, a tiny plan whose free allowances and egress tiers small workloads cross,
 * and an unpriced provider, delivered shuffled, in batches, with resent duplicates and invalid
 * events; every row equal to the rounding unit, and the rows of every groupBy summing to the
 * ungrouped total. Also CSV, FOCUS, the CLI, bad parameters and tenants apart. Both stores.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { loadBucketPlans } from '../../src/pricing/assignment.js';
import { loadPriceBook, SHIPPED_PRICES_DIR } from '../../src/pricing/catalogue.js';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import type { WireEvent } from '../support/events.js';
import { tempDir } from '../support/scratch.js';
import { iso, queryString, send, shuffle } from '../support/workload.js';
import type { WorkloadSpec } from '../support/workload.js';
import { createKey, request, runCli, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';
import { countedEvents, DIMS, isWindowStart, windowLabel } from '../usage/reference.js';
import type { Dim, RefQuery } from '../usage/reference.js';
import { referenceFine, referenceRows } from './reference.js';
import type { RefRow } from './reference.js';

const at = (text: string) => Date.parse(text) / 1000;

/** A plan whose allowances and tiers a hundred events cross: per request prices, a "GB" of 10^6 bytes. */
function tinyPlanDir(): { prices: string; bucketPlans: string } {
  const dir = tempDir('bm-costs-');
  const aws = JSON.parse(readFileSync(join(SHIPPED_PRICES_DIR, 'aws-s3-standard-us-east-1.json'), 'utf8'));
  const tiny = {
    ...aws,
    $schema: undefined,
    id: 'test-tiny',
    default: undefined,
    requests: { ...aws.requests, classes: { tier1: { price: '0.005', per: 1, freePerDay: 2 }, tier2: { price: '0.0004', per: 1, freePerMonth: 3 } } },
    egress: { gbBytes: 1_000_000, tiers: [{ uptoGb: 2, pricePerGb: '0' }, { uptoGb: 20, pricePerGb: '0.09' }, { pricePerGb: '0.085' }] },
  };
  mkdirSync(join(dir, 'prices'));
  writeFileSync(join(dir, 'prices', 'tiny.json'), JSON.stringify(tiny));
  writeFileSync(join(dir, 'bucket-plans.json'), JSON.stringify({ buckets: { tiny: 'test-tiny' } }));
  return { prices: join(dir, 'prices'), bucketPlans: join(dir, 'bucket-plans.json') };
}

const FILES = tinyPlanDir();
const BOOK = loadPriceBook(FILES.prices);
const PLANS = loadBucketPlans(FILES.bucketPlans, BOOK);

const FROM = at('2026-02-26T00:00:00Z');
const TO = at('2026-04-04T00:00:00Z');
const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York'];
const PROVIDERS = ['aws', 'backblaze', 'wasabi', 'cloudflare', 'gcp', 'digitalocean', 'minio'];
const POOLS: Record<Exclude<Dim, 'action' | 'provider'>, string[]> = {
  bucket: ['media', 'tiny'],
  customerId: ['c1', 'c2', 'c3'],
  featureId: ['f1', 'f2'],
  clientType: ['ios', 'web'],
  clientId: ['d1', 'd2'],
};
/** Kinds that store no bytes: stored bytes and their rules are storage-costs.test.ts's. */
const ACTIONS = ['GetObject', 'ListObjectsV2', 'HeadObject', 'DeleteObject', 'ListBuckets'];


const specArb: fc.Arbitrary<WorkloadSpec> = fc.record(
  {
    action: fc.constantFrom(...ACTIONS),
    // Most in March (month boundaries and the Berlin and New York DST changes), some either side.
    timestamp: fc.oneof(fc.integer({ min: at('2026-03-01T00:00:00Z'), max: at('2026-04-01T00:00:00Z') - 1 }), fc.integer({ min: FROM, max: TO - 1 })),
    provider: fc.constantFrom(...PROVIDERS),
    bucket: fc.constantFrom(...POOLS.bucket),
    customerId: fc.constantFrom(...POOLS.customerId),
    featureId: fc.constantFrom(...POOLS.featureId),
    clientType: fc.constantFrom(...POOLS.clientType),
    clientId: fc.constantFrom(...POOLS.clientId),
    bytes: fc.oneof(fc.integer({ min: 0, max: 5_000_000 }), fc.integer({ min: 0, max: 400_000_000_000 })),
    billable: fc.boolean(),
    withId: fc.boolean(),
    invalid: fc.integer({ min: 0, max: 14 }).map((n) => n === 0),
  },
  { requiredKeys: ['action', 'timestamp', 'provider', 'bucket', 'bytes', 'withId', 'invalid'] },
);

function wire(spec: WorkloadSpec, id: string): WireEvent {
  const e: WireEvent = { action: spec.action, timestamp: spec.invalid ? 'not a time' : iso(spec.timestamp), provider: spec.provider };
  for (const d of ['customerId', 'featureId', 'clientType', 'clientId'] as const) if (spec[d] !== undefined) e[d] = spec[d];
  if (spec.withId) e.eventId = id;
  if (spec.action === 'ListBuckets') return e;
  e.bucket = spec.bucket;
  if (spec.action === 'ListObjectsV2') return e;
  e.objectKey = 'k';
  if (spec.action === 'GetObject') e.bytes = spec.bytes;
  if (spec.action === 'GetObject' && spec.billable !== undefined) e.isBillableEgress = spec.billable;
  return e;
}

const filterArb = fc.dictionary(fc.constantFrom(...DIMS), fc.constant(null), { maxKeys: 2 }).chain((dims) =>
  fc.record(
    Object.fromEntries(
      Object.keys(dims).map((d) => [d, fc.subarray(['', ...(d === 'action' ? ACTIONS : d === 'provider' ? PROVIDERS : POOLS[d as keyof typeof POOLS])], { minLength: 1, maxLength: 3 })]),
    ) as Record<string, fc.Arbitrary<string[]>>,
  ),
);

const rangeArb = fc
  .tuple(fc.integer({ min: FROM / 3600, max: TO / 3600 - 1 }), fc.integer({ min: FROM / 3600, max: TO / 3600 - 1 }))
  .map(([a, b]) => (a === b ? [FROM, TO] : [Math.min(a, b) * 3600, (Math.max(a, b) + 1) * 3600]));

const queryArb: fc.Arbitrary<RefQuery> = fc.record({
  range: fc.oneof(fc.constant([FROM, TO]), rangeArb),
  granularity: fc.constantFrom('none', 'hour', 'day', 'month'),
  timeZone: fc.constantFrom(...ZONES),
  groupBy: fc.shuffledSubarray([...DIMS], { maxLength: 3 }),
  filters: fc.oneof(fc.constant({}), filterArb),
}).map(({ range, ...q }) => ({ ...q, from: range[0]!, to: range[1]! }));


const COSTS = ['storageCost', 'requestCost', 'egressCost', 'otherCost', 'totalCost'] as const;
const units = (text: string) => {
  assert.match(text, /^-?\d+\.\d{10}$/, 'amounts have 10 places');
  return BigInt(text.replace('.', ''));
};

/** Every page of a cost answer, rows checked for windows and order, keyed as referenceRows() keys them. */
async function fetchCosts(url: string, key: string, q: RefQuery, limit?: number): Promise<Map<string, RefRow>> {
  const rows: Record<string, unknown>[] = [];
  let cursor: string | null = null;
  do {
    const extra: Record<string, string> = limit === undefined ? {} : { limit: String(limit) };
    if (cursor !== null) extra.cursor = cursor;
    const reply = await request(`${url}/v1/costs?${queryString(q, extra)}`, { key });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.json.groupBy, q.groupBy);
    if (limit !== undefined) assert.ok(reply.json.rows.length <= limit);
    rows.push(...reply.json.rows);
    cursor = reply.json.nextCursor;
  } while (cursor !== null);
  const byPlan = q.groupBy.includes('provider') || q.groupBy.includes('bucket');
  const out = new Map<string, RefRow>();
  for (const row of rows) {
    const start = at(row.start as string);
    const end = at(row.end as string);
    assert.ok(start >= q.from && end <= q.to && start < end, `window ${row.start}..${row.end} within the range`);
    if (q.granularity !== 'none') {
      assert.ok(start === q.from || isWindowStart(q.granularity, q.timeZone, start), `${row.start} starts a ${q.granularity} in ${q.timeZone}`);
      assert.ok(end === q.to || isWindowStart(q.granularity, q.timeZone, end), `${row.end} ends a ${q.granularity} in ${q.timeZone}`);
    }
    assert.equal('planId' in row, byPlan, 'planId where groupBy holds provider or bucket');
    const sums = Object.fromEntries(COSTS.map((c) => [c, units(row[c] as string)])) as unknown as RefRow;
    assert.equal(sums.storageCost + sums.requestCost + sums.egressCost + sums.otherCost, sums.totalCost, 'columns add up to totalCost');
    const id = [windowLabel(q.granularity, q.timeZone, start), JSON.stringify(q.groupBy.map((d) => row[d])), byPlan ? row.planId : null, row.currency, row.unallocated, row.unpriced].join('|');
    assert.ok(!out.has(id), `one row per window and group: ${id}`);
    out.set(id, sums);
  }
  return out;
}


/** Per currency, the sum of every row's totalCost. */
function totals(rows: Map<string, RefRow>): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const [id, r] of rows) {
    const currency = id.split('|')[3]!;
    out.set(currency, (out.get(currency) ?? 0n) + r.totalCost);
  }
  return out;
}

const show = (m: Map<string, RefRow | bigint>) => Object.fromEntries([...m].map(([k, v]) => [k, typeof v === 'bigint' ? String(v) : Object.fromEntries(Object.entries(v).map(([c, x]) => [c, String(x)]))]));

for (const backend of BACKENDS) {
  describe(`costs (${backend.name})`, { skip: backend.skip }, () => {
    let server: ServerProcess;
    let storeArgs: string[];
    let tenants = 0;
    const priceArgs = ['--prices', FILES.prices, '--bucket-plans', FILES.bucketPlans];
    const newTenant = async () => {
      const name = `costs-${++tenants}`;
      return { name, key: await createKey(name, storeArgs) };
    };

    before(async () => {
      storeArgs = await backend.fresh();
      server = await startServer({ args: [...storeArgs, ...priceArgs] });
    });
    after(async () => {
      await server.stop();
      await dropFreshStores();
    });

    it('equals the reference on every row, and every groupBy sums to the total', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.record({
            specs: fc.array(specArb, { minLength: 1, maxLength: 90 }),
            resend: fc.array(fc.tuple(fc.nat(), fc.boolean()), { maxLength: 20 }),
            seed: fc.integer(),
            batch: fc.integer({ min: 1, max: 40 }),
          }),
          fc.array(queryArb, { minLength: 3, maxLength: 4 }),
          async (w, queries) => {
            const { key } = await newTenant();
            const sent = w.specs.map((spec, i) => ({ event: wire(spec, `e-${i}`), valid: !spec.invalid }));
            for (const [n, changed] of w.resend) {
              const original = sent[n % sent.length]!;
              sent.push({ event: { ...original.event, ...(changed && typeof original.event.bytes === 'number' ? { bytes: (original.event.bytes as number) + 1 } : {}) }, valid: original.valid });
            }
            const arrival = shuffle(sent, w.seed);
            await send(server.url, key, arrival.map((s) => s.event), w.batch);
            const fine = referenceFine(countedEvents(arrival), BOOK, PLANS);
            for (const q of queries) {
              const got = await fetchCosts(server.url, key, q);
              assert.deepEqual(show(got), show(referenceRows(fine, q)), `query ${queryString(q)}`);
              // Exact sums: the ungrouped answer's total, per currency, equals the sum of this groupBy's rows.
              const none = await fetchCosts(server.url, key, { ...q, granularity: 'none', groupBy: [] });
              assert.deepEqual(show(totals(got)), show(totals(none)), `sums of ${queryString(q)}`);
            }
            const q = queries[0]!;
            assert.deepEqual(show(await fetchCosts(server.url, key, q, 2)), show(referenceRows(fine, q)), 'the same rows in pages of 2');
          },
        ),
        {
          numRuns: 2,
          examples: [
            // Found by this test (CI, seed -1983684349): the month priced for `provider=` (events with no
            // provider: none here) was kept as the month of every provider, and the query after it got no rows.
            [
              { specs: [{ action: 'GetObject', timestamp: 1772064000, provider: 'aws', bucket: 'media', bytes: 0, withId: false, invalid: false }], resend: [], seed: 0, batch: 1 },
              [
                { granularity: 'none', timeZone: 'UTC', groupBy: [], filters: { provider: [''] }, from: 1772064000, to: 1775260800 },
                { granularity: 'none', timeZone: 'UTC', groupBy: [], filters: {}, from: 1772064000, to: 1775260800 },
                { granularity: 'none', timeZone: 'UTC', groupBy: [], filters: {}, from: 1772323200, to: 1772330400 },
              ],
            ],
          ],
        },
      );
    });

    it('sums exactly for every groupBy dimension over a month of many keys, with DST days', async () => {
      const { key } = await newTenant();
      const specs = fc.sample(specArb, { numRuns: 250, seed: 7 }).map((s) => ({ ...s, invalid: false }));
      const sent = specs.map((spec, i) => ({ event: wire(spec, `g-${i}`), valid: true }));
      await send(server.url, key, sent.map((s) => s.event), 100);
      const fine = referenceFine(countedEvents(sent), BOOK, PLANS);
      const whole: RefQuery = { from: FROM, to: TO, granularity: 'none', timeZone: 'UTC', groupBy: [], filters: {} };
      const total = totals(await fetchCosts(server.url, key, whole));
      assert.deepEqual(show(total), show(totals(referenceRows(fine, whole))));
      for (const zone of ['Europe/Berlin', 'America/New_York']) {
        for (const d of zone === 'Europe/Berlin' ? DIMS : (['customerId'] as Dim[])) {
          const q: RefQuery = { from: FROM, to: TO, granularity: 'day', timeZone: zone, groupBy: [d], filters: {} };
          const got = await fetchCosts(server.url, key, q);
          assert.deepEqual(show(got), show(referenceRows(fine, q)), `${zone} ${d}`);
          assert.deepEqual(show(totals(got)), show(total), `${zone} ${d}: rows sum to the total`);
        }
      }
    });

    it('prices unallocated month-end charges, unpriced providers, CSV, FOCUS and the CLI alike', async () => {
      const { name, key } = await newTenant();
      const events = [
        { action: 'HeadObject', timestamp: '2026-03-10T10:20:00Z', provider: 'wasabi', bucket: 'w', objectKey: 'k', customerId: 'acme' },
        { action: 'GetObject', timestamp: '2026-03-10T11:20:00Z', provider: 'digitalocean', bucket: 'd', objectKey: 'k', bytes: 10, customerId: 'acme' },
        { action: 'GetObject', timestamp: '2026-03-10T12:20:00Z', provider: 'minio', bucket: 'm', objectKey: 'k', bytes: 10, customerId: 'globex' },
        { action: 'ListObjectsV2', timestamp: '2026-03-11T12:20:00Z', provider: 'aws', bucket: 'tiny', customerId: 'globex' },
        { action: 'ListObjectsV2', timestamp: '2026-03-11T12:40:00Z', provider: 'aws', bucket: 'tiny', customerId: 'globex' },
        { action: 'ListObjectsV2', timestamp: '2026-03-11T12:50:00Z', provider: 'aws', bucket: 'tiny', customerId: 'acme' },
      ];
      await send(server.url, key, events, 10);
      const q = 'from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z&groupBy=provider,customerId';
      const reply = await request(`${server.url}/v1/costs?${q}`, { key });
      assert.equal(reply.status, 200, reply.text);
      const row = (provider: string, customerId: string | null, unallocated = false) =>
        reply.json.rows.find((r: Record<string, unknown>) => r.provider === provider && r.customerId === customerId && r.unallocated === unallocated);
      // Wasabi: 1 TB-month minimum at $6.99 (the version in force in March), nothing stored: all of it unallocated.
      assert.deepEqual(row('wasabi', null, true), { start: '2026-03-01T00:00:00Z', end: '2026-04-01T00:00:00Z', provider: 'wasabi', customerId: null, planId: 'wasabi-pay-as-you-go', currency: 'USD', storageCost: '0.0000000000', requestCost: '0.0000000000', egressCost: '0.0000000000', otherCost: '6.9900000000', totalCost: '6.9900000000', unallocated: true, unpriced: false });
      assert.equal(row('digitalocean', null, true).otherCost, '5.0000000000', "DigitalOcean's $5 subscription, unallocated");
      assert.deepEqual(row('minio', 'globex'), { start: '2026-03-01T00:00:00Z', end: '2026-04-01T00:00:00Z', provider: 'minio', customerId: 'globex', planId: null, currency: null, storageCost: '0.0000000000', requestCost: '0.0000000000', egressCost: '0.0000000000', otherCost: '0.0000000000', totalCost: '0.0000000000', unallocated: false, unpriced: true });
      // The tiny plan: two tier-1 calls (LIST) free a day; the third (12:00-13:00, shared 2 : 1 by count) costs $0.005.
      assert.equal(row('aws', 'globex').requestCost, '0.0033333333');
      assert.equal(row('aws', 'acme').requestCost, '0.0016666667');

      const csv = await request(`${server.url}/v1/costs?${q}&format=csv`, { key });
      assert.match(csv.headers.get('content-type')!, /^text\/csv/);
      const [head, ...lines] = csv.text.trimEnd().split('\r\n');
      assert.equal(head, 'start,end,provider,customerId,planId,currency,storageCost,requestCost,egressCost,otherCost,totalCost,unallocated,unpriced');
      assert.equal(lines.length, reply.json.rows.length);
      assert.ok(lines.includes('2026-03-01T00:00:00Z,2026-04-01T00:00:00Z,minio,globex,,,0.0000000000,0.0000000000,0.0000000000,0.0000000000,0.0000000000,false,true'), csv.text);

      const focus = await request(`${server.url}/v1/costs?from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z&format=focus`, { key });
      assert.equal(focus.status, 200, focus.text);
      const [focusHead, ...focusLines] = focus.text.trimEnd().split('\n');
      const columns = focusHead!.split(',');
      const col = (line: string, name: string) => line.split(',')[columns.indexOf(name)]!;
      for (const c of ['BilledCost', 'EffectiveCost', 'ListCost', 'ChargePeriodStart', 'ChargePeriodEnd', 'PricingQuantity', 'PricingUnit', 'ConsumedQuantity', 'ConsumedUnit', 'ServiceName', 'ProviderName', 'Tags']) assert.ok(columns.includes(c), c);
      const billed = focusLines.reduce((s, l) => s + units(col(l, 'BilledCost')), 0n);
      const total = (await request(`${server.url}/v1/costs?from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z`, { key })).json.rows.reduce((s: bigint, r: { totalCost: string }) => s + units(r.totalCost), 0n);
      assert.equal(billed, total, 'the FOCUS rows sum to the total');
      assert.ok(focusLines.every((l) => col(l, 'BillingAccountId') === name));

      const cli = async (...flags: string[]) => {
        const result = await runCli(['costs', '--tenant', name, '--from', '2026-03-01T00:00:00Z', '--to', '2026-04-01T00:00:00Z', ...flags, ...storeArgs, ...priceArgs]);
        assert.equal(result.code, 0, result.stderr);
        return result.stdout;
      };
      assert.deepEqual(JSON.parse(await cli('--groupBy', 'provider,customerId', '--json')), reply.json);
      assert.equal(await cli('--focus'), focus.text);
      assert.match(await cli('--groupBy', 'provider'), /wasabi-pay-as-you-go/);
    });

    it('refuses bad parameters naming each, and keeps tenants apart', async () => {
      const { key } = await newTenant();
      const bad = await request(`${server.url}/v1/costs?from=2026-03-01T00:30:00Z&to=2026-03-02T00:00:00Z&format=xml&groupBy=planet`, { key });
      assert.equal(bad.status, 400);
      assert.deepEqual(bad.json.errors.map((e: { path: string }) => e.path).sort(), ['/format', '/from', '/groupBy']);
      assert.match(bad.json.errors.find((e: { path: string }) => e.path === '/format').expected, /focus/);
      const kolkata = await request(`${server.url}/v1/costs?from=2026-03-01T00:00:00Z&to=2026-03-03T00:00:00Z&granularity=day&timeZone=Asia/Kolkata`, { key });
      assert.equal(kolkata.json.code, 'BM_ERR_USAGE_ZONE_NOT_EXACT');
      await send(server.url, key, [{ action: 'GetObject', timestamp: '2026-03-01T05:30:00Z', provider: 'aws', bucket: 'b', objectKey: 'k', bytes: 7 }], 1);
      const mine = await request(`${server.url}/v1/costs?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z`, { key });
      assert.equal(mine.json.rows.length, 1);
      const other = await newTenant();
      assert.deepEqual((await request(`${server.url}/v1/costs?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z`, { key: other.key })).json.rows, []);
    });
  });
}
