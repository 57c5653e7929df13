/**
 * GET /v1/costs with stored bytes, end to end on both stores: generated storage histories over a
 * month on buckets of every metering kind (AWS byte-hours, versioned and not; Wasabi snapshots with
 * its minimum size, 90-day minimum and monthly minimum; R2 daily peaks; B2's egress allowance;
 * DigitalOcean; an unpriced provider): puts, copies, multipart uploads, deletes before the minimum
 * duration, forced bucket deletes and downloads, delivered shuffled and duplicated. The reference
 * chains three independent models: the inventory's (test/inventory/reference.ts) gives each
 * version's and part's life, reference.ts turns lives into quantities hour by hour, and the pricing
 * reference prices them. Every row equals it to the rounding unit; every groupBy sums to the total.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { loadPriceBook } from '../../src/pricing/catalogue.js';
import { NO_BUCKET_PLANS } from '../../src/pricing/assignment.js';
import type { StorageInterval } from '../../src/store/types.js';
import { simulate } from '../inventory/reference.js';
import type { RefEvent as InventoryEvent } from '../inventory/reference.js';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import type { WireEvent } from '../support/events.js';
import { createKey, request, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';
import { countedEvents, DIMS } from '../usage/reference.js';
import type { RefQuery } from '../usage/reference.js';
import { referenceFine, referenceRows } from './reference.js';
import { shuffle } from '../support/workload.js';
import type { RefRow } from './reference.js';

const at = (text: string) => Date.parse(text) / 1000;
const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');
const BOOK = loadPriceBook();

/** Each bucket belongs to one provider; versioned buckets get version ids. */
const BUCKETS: Record<string, { provider: string; versioned: boolean }> = {
  'aws-v': { provider: 'aws', versioned: true },
  'aws-u': { provider: 'aws', versioned: false },
  was: { provider: 'wasabi', versioned: false },
  r2: { provider: 'cloudflare', versioned: false },
  b2: { provider: 'backblaze', versioned: true },
  do: { provider: 'digitalocean', versioned: false },
  min: { provider: 'minio', versioned: false },
};
const KEYS = ['a', 'b'];
const VERSIONS = ['v1', 'v2', 'v3'];
const FROM = at('2026-02-20T00:00:00Z');
const TO = at('2026-04-01T00:00:00Z');

const time = fc.oneof(
  fc.integer({ min: FROM, max: TO - 1 }),
  // Whole hours and midnights (snapshots, ties within a second), and a few days apart (minimum durations).
  fc.integer({ min: FROM / 3600, max: TO / 3600 - 1 }).map((h) => h * 3600),
  fc.integer({ min: FROM / 86400, max: TO / 86400 - 1 }).map((d) => d * 86400),
);
const size = fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 5_000_000_000 }), fc.integer({ min: 0, max: 5_000_000_000_000 }));

type Op = Omit<InventoryEvent, 'eventId' | 'provider'> & { bytes?: number };

const opArb = (buckets: string[]): fc.Arbitrary<Op> => fc.tuple(fc.constantFrom(...buckets), time, fc.constantFrom('c1', 'c2', undefined)).chain(([bucket, timestamp, customerId]) => {
  const base = { bucket, timestamp, ...(customerId === undefined ? {} : { customerId }) };
  const versioned = BUCKETS[bucket]!.versioned;
  const vid = versioned ? fc.constantFrom(...VERSIONS) : fc.constant(undefined);
  const strip = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
  return fc.oneof(
    { weight: 6, arbitrary: fc.record({ k: fc.constantFrom(...KEYS), v: vid, n: size }).map(({ k, v, n }) => strip({ ...base, action: 'PutObject', objectKey: k, versionId: v, bytes: n })) },
    { weight: 2, arbitrary: fc.record({ k: fc.constantFrom(...KEYS), v: vid, s: fc.constantFrom(...KEYS) }).map(({ k, v, s }) => strip({ ...base, action: 'CopyObject', objectKey: k, versionId: v, copySource: { bucket, objectKey: s } })) },
    { weight: 1, arbitrary: fc.constantFrom(...KEYS).map((k) => ({ ...base, action: 'CreateMultipartUpload', objectKey: k, uploadId: 'u1' })) },
    { weight: 2, arbitrary: fc.record({ p: fc.integer({ min: 1, max: 2 }), n: size }).map(({ p, n }) => ({ ...base, action: 'UploadPart', uploadId: 'u1', partNumber: p, bytes: n })) },
    { weight: 1, arbitrary: vid.map((v) => strip({ ...base, action: 'CompleteMultipartUpload', uploadId: 'u1', versionId: v })) },
    { weight: 1, arbitrary: fc.constant({ ...base, action: 'AbortMultipartUpload', uploadId: 'u1' }) },
    {
      weight: 4,
      arbitrary: fc.record({ k: fc.constantFrom(...KEYS), v: fc.constantFrom(...VERSIONS) }).map(({ k, v }) =>
        strip({ ...base, action: 'DeleteObject', objectKey: k, hardDeletedVersionId: versioned ? v : undefined }),
      ),
    },
    { weight: 1, arbitrary: fc.constant({ ...base, action: 'DeleteBucket', force: true }) },
    { weight: 3, arbitrary: fc.record({ k: fc.constantFrom(...KEYS), n: size }).map(({ k, n }) => ({ ...base, action: 'GetObject', objectKey: k, bytes: n })) },
  );
});

function wire(op: Op, id: string): WireEvent {
  return { ...op, timestamp: iso(op.timestamp), provider: BUCKETS[op.bucket]!.provider, eventId: id } as WireEvent;
}

/** The inventory's intervals from the reference model's lives (uploads are no bytes). */
function intervalsOf(counted: WireEvent[]): StorageInterval[] {
  const lives = simulate(counted.map((e) => ({ ...(e as unknown as InventoryEvent), timestamp: at(e.timestamp as string) })));
  return lives
    .filter((l) => l.what !== 'upload')
    .map((l) => ({
      kind: l.what as StorageInterval['kind'],
      key: { provider: BUCKETS[l.bucket]!.provider, bucket: l.bucket, customerId: l.customerId, featureId: null, clientType: null, clientId: null, action: l.action as StorageInterval['key']['action'] },
      objectKey: l.key ?? '',
      versionId: l.versionId,
      size: l.size,
      start: l.start,
      end: l.end,
      createdBy: l.createdBy,
      endedBy: l.endedBy,
    }));
}

const COSTS = ['storageCost', 'requestCost', 'egressCost', 'otherCost', 'totalCost'] as const;
const show = (m: Map<string, RefRow>) => Object.fromEntries([...m].map(([k, v]) => [k, Object.fromEntries(Object.entries(v).map(([c, x]) => [c, String(x)]))]));

async function costs(url: string, key: string, q: RefQuery): Promise<Map<string, RefRow>> {
  const params = new URLSearchParams({ from: iso(q.from), to: iso(q.to), granularity: q.granularity, timeZone: q.timeZone });
  if (q.groupBy.length > 0) params.set('groupBy', q.groupBy.join(','));
  const reply = await request(`${url}/v1/costs?${params}`, { key });
  assert.equal(reply.status, 200, reply.text);
  const byPlan = q.groupBy.includes('provider') || q.groupBy.includes('bucket');
  const out = new Map<string, RefRow>();
  for (const row of reply.json.rows) {
    const label = q.granularity === 'none' ? 'all' : (row.start as string).slice(0, q.granularity === 'month' ? 7 : 10);
    const id = [label, JSON.stringify(q.groupBy.map((d) => row[d])), byPlan ? row.planId : null, row.currency, row.unallocated, row.unpriced].join('|');
    out.set(id, Object.fromEntries(COSTS.map((c) => [c, BigInt((row[c] as string).replace('.', ''))])) as unknown as RefRow);
  }
  return out;
}

const totalOf = (rows: Map<string, RefRow>) => [...rows.values()].reduce((s, r) => s + r.totalCost, 0n);

for (const backend of BACKENDS) {
  describe(`costs with stored bytes (${backend.name})`, { skip: backend.skip }, () => {
    let server: ServerProcess;
    let storeArgs: string[];
    let tenants = 0;

    before(async () => {
      storeArgs = await backend.fresh();
      server = await startServer({ args: storeArgs });
    });
    after(async () => {
      await server.stop();
      await dropFreshStores();
    });

    it('equals the inventory and pricing references on every row, summing exactly for every groupBy', async () => {
      // A few buckets a history, so that its operations meet: overwrites, deletes of what was put, copies.
      const historyArb = fc.shuffledSubarray(Object.keys(BUCKETS), { minLength: 1, maxLength: 3 }).chain((buckets) => fc.array(opArb(buckets), { minLength: 1, maxLength: 50 }));
      await fc.assert(
        fc.asyncProperty(historyArb, fc.array(fc.nat(), { maxLength: 10 }), fc.integer(), async (ops, resend, seed) => {
          const key = await createKey(`storage-costs-${++tenants}`, storeArgs);
          const sent = ops.map((op, i) => wire(op, `e-${i}`));
          for (const n of resend) sent.push(sent[n % sent.length]!);
          const arrival = shuffle(sent, seed);
          for (let i = 0; i < arrival.length; i += 25) {
            const reply = await request(`${server.url}/s3/batch`, { key, body: arrival.slice(i, i + 25) });
            assert.equal(reply.status, 200, reply.text);
          }
          const counted = [...new Map(sent.map((e) => [e.eventId as string, e])).values()];
          const fine = referenceFine(countedEvents(counted.map((event) => ({ event, valid: true }))), BOOK, NO_BUCKET_PLANS, intervalsOf(counted), ['2026-02', '2026-03']);
          const queries: RefQuery[] = [
            { from: FROM, to: TO, granularity: 'day', timeZone: 'UTC', groupBy: ['provider', 'customerId'], filters: {} },
            { from: FROM, to: TO, granularity: 'none', timeZone: 'UTC', groupBy: ['bucket', 'action'], filters: {} },
          ];
          const total = await costs(server.url, key, { from: FROM, to: TO, granularity: 'none', timeZone: 'UTC', groupBy: [], filters: {} });
          for (const q of queries) {
            const got = await costs(server.url, key, q);
            assert.deepEqual(show(got), show(referenceRows(fine, q)), JSON.stringify(q));
            assert.equal(totalOf(got), totalOf(total), 'rows sum to the ungrouped total');
          }
          for (const d of DIMS) assert.equal(totalOf(await costs(server.url, key, { from: FROM, to: TO, granularity: 'month', timeZone: 'UTC', groupBy: [d], filters: {} })), totalOf(total), `groupBy ${d} sums to the total`);
        }),
        { numRuns: 5 },
      );
    });

    it('prices a fixed month touching every storage rule, equal to the references', async () => {
      const key = await createKey(`storage-costs-${++tenants}`, storeArgs);
      const t = (text: string) => at(`2026-03-${text}Z`);
      const ops: Op[] = [
        // R2: 4 TB all month from the 1st, 1 TB for six hours on the 2nd (the day's peak is 5 TB).
        { bucket: 'r2', timestamp: t('01T10:00:00'), action: 'PutObject', objectKey: 'a', bytes: 4_000_000_000_000, customerId: 'c1' },
        { bucket: 'r2', timestamp: t('02T06:00:00'), action: 'PutObject', objectKey: 'b', bytes: 1_000_000_000_000, customerId: 'c2' },
        { bucket: 'r2', timestamp: t('02T12:00:00'), action: 'DeleteObject', objectKey: 'b', customerId: 'c2' },
        // Wasabi: a 100 GB object deleted after 10 days (80 days early), 1 KB objects padded to 4 KB, overwritten at midnight.
        { bucket: 'was', timestamp: t('03T00:00:00'), action: 'PutObject', objectKey: 'a', bytes: 100_000_000_000, customerId: 'c1' },
        { bucket: 'was', timestamp: t('13T00:00:00'), action: 'DeleteObject', objectKey: 'a', customerId: 'c1' },
        { bucket: 'was', timestamp: t('05T08:30:00'), action: 'PutObject', objectKey: 'b', bytes: 1024, customerId: 'c2' },
        { bucket: 'was', timestamp: t('20T00:00:00'), action: 'PutObject', objectKey: 'b', bytes: 2048, customerId: 'c1' },
        // DigitalOcean: small objects billed as 4 KiB, by byte-hours; its fee.
        { bucket: 'do', timestamp: t('04T04:04:04'), action: 'PutObject', objectKey: 'a', bytes: 10, customerId: 'c2' },
        // AWS versioned: two versions of a key, one hard-deleted; a multipart upload left incomplete.
        { bucket: 'aws-v', timestamp: t('06T00:00:00'), action: 'PutObject', objectKey: 'a', versionId: 'v1', bytes: 3_000_000_000_000, customerId: 'c1' },
        { bucket: 'aws-v', timestamp: t('07T00:00:00'), action: 'PutObject', objectKey: 'a', versionId: 'v2', bytes: 2_000_000_000_000, customerId: 'c2' },
        { bucket: 'aws-v', timestamp: t('08T00:00:00'), action: 'DeleteObject', objectKey: 'a', hardDeletedVersionId: 'v1', customerId: 'c2' },
        { bucket: 'aws-v', timestamp: t('09T09:00:00'), action: 'CreateMultipartUpload', objectKey: 'm', uploadId: 'u1', customerId: 'c1' },
        { bucket: 'aws-v', timestamp: t('09T09:10:00'), action: 'UploadPart', uploadId: 'u1', partNumber: 1, bytes: 500_000_000_000, customerId: 'c1' },
        // B2: egress within 3 × the month's average stored bytes is free, the rest is not.
        { bucket: 'b2', timestamp: t('01T00:00:00'), action: 'PutObject', objectKey: 'a', versionId: 'v1', bytes: 50_000_000_000, customerId: 'c1' },
        { bucket: 'b2', timestamp: t('10T10:00:00'), action: 'GetObject', objectKey: 'a', bytes: 400_000_000_000, customerId: 'c2' },
        // An unpriced provider's stored bytes: usage kept, cost an explicit unpriced row.
        { bucket: 'min', timestamp: t('11T11:00:00'), action: 'PutObject', objectKey: 'a', bytes: 1000, customerId: 'c2' },
      ];
      const sent = ops.map((op, i) => wire(op, `f-${i}`));
      const reply = await request(`${server.url}/s3/batch`, { key, body: shuffle(sent, 7) });
      assert.equal(reply.status, 200, reply.text);
      const fine = referenceFine(countedEvents(sent.map((event) => ({ event, valid: true }))), BOOK, NO_BUCKET_PLANS, intervalsOf(sent), ['2026-03']);
      const q: RefQuery = { from: at('2026-03-01T00:00:00Z'), to: at('2026-04-01T00:00:00Z'), granularity: 'none', timeZone: 'UTC', groupBy: ['provider', 'customerId'], filters: {} };
      const got = await costs(server.url, key, q);
      assert.deepEqual(show(got), show(referenceRows(fine, q)));
      const row = (provider: string, customer: string | null, unallocated = false) => got.get(`all|${JSON.stringify([provider, customer])}|${[...got.keys()].find((k) => k.startsWith(`all|${JSON.stringify([provider, customer])}|`))?.split('|')[2]}|${provider === 'minio' ? '' : 'USD'}|${unallocated}|${provider === 'minio'}`);
      // (DigitalOcean's padded 4 KiB are inside the 250 GiB its fee includes: 0.)
      for (const [provider, customer] of [['cloudflare', 'c1'], ['wasabi', 'c1'], ['wasabi', 'c2'], ['aws', 'c1'], ['aws', 'c2']] as const) {
        assert.ok(row(provider, customer)!.storageCost > 0n, `${provider} ${customer} pays for storage`);
      }
      assert.ok(row('wasabi', 'c1')!.otherCost > 0n, 'the early delete is billed to its creator');
      assert.ok(row('backblaze', 'c2')!.egressCost > 0n, 'egress beyond the allowance');
      assert.equal(row('digitalocean', null, true)!.otherCost, 50_000_000_000n, "DigitalOcean's $5, unallocated");
      assert.ok(row('minio', 'c2') !== undefined, 'unpriced row');
    });
  });
}
