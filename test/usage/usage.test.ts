/**
 * GET /v1/usage against the reference model (reference.ts): generated workloads delivered shuffled,
 * in batches, with resent duplicates, invalid and late events; every granularity, DST days in
 * Europe/Berlin and America/New_York, groupBy and filters (empty values included); both stores.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import type { WireEvent } from '../support/events.js';
import { iso, queryString, send, shuffle } from '../support/workload.js';
import type { WorkloadSpec } from '../support/workload.js';
import { createKey, request, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';
import { countedEvents, DIMS, isWindowStart, MEASURE_NAMES, reference, windowLabel } from './reference.js';
import type { Dim, RefQuery } from './reference.js';

const at = (text: string) => Date.parse(text) / 1000;

/** DST changes of 2026: New York and Berlin in spring (23-hour days) and autumn (25-hour days). */
const CENTERS = ['2026-03-08T07:00:00Z', '2026-03-29T01:00:00Z', '2026-10-25T01:00:00Z', '2026-11-01T06:00:00Z'].map(at);
const FROM = at('2026-03-01T00:00:00Z');
const TO = at('2026-11-05T00:00:00Z');
const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York'];
const GRANULARITIES = ['none', 'hour', 'day', 'month'];

const POOLS: Record<Exclude<Dim, 'action'>, string[]> = {
  provider: ['aws', 'wasabi'],
  bucket: ['media', 'logs'],
  customerId: ['c1', 'c2', 'c3'],
  featureId: ['f1', 'f2'],
  clientType: ['ios', 'web'],
  clientId: ['d1', 'd2', 'd3', 'd4'],
};
const ACTIONS = ['GetObject', 'PutObject', 'PostObject', 'UploadPart', 'UploadPartCopy', 'HeadBucket', 'DeleteObject', 'ListBuckets'];


const specArb: fc.Arbitrary<WorkloadSpec> = fc.record(
  {
    action: fc.constantFrom(...ACTIONS),
    timestamp: fc.tuple(fc.constantFrom(...CENTERS), fc.integer({ min: -40 * 3600, max: 40 * 3600 })).map(([c, d]) => c + d),
    provider: fc.constantFrom(...POOLS.provider),
    bucket: fc.constantFrom(...POOLS.bucket),
    customerId: fc.constantFrom(...POOLS.customerId),
    featureId: fc.constantFrom(...POOLS.featureId),
    clientType: fc.constantFrom(...POOLS.clientType),
    clientId: fc.constantFrom(...POOLS.clientId),
    bytes: fc.integer({ min: 0, max: 5_000_000_000 }),
    billable: fc.boolean(),
    withId: fc.boolean(),
    invalid: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  },
  { requiredKeys: ['action', 'timestamp', 'provider', 'bucket', 'bytes', 'withId', 'invalid'] },
);

function wire(spec: WorkloadSpec, id: string): WireEvent {
  const e: WireEvent = { action: spec.action, timestamp: spec.invalid ? 'not a time' : iso(spec.timestamp), provider: spec.provider };
  for (const d of ['customerId', 'featureId', 'clientType', 'clientId'] as const) if (spec[d] !== undefined) e[d] = spec[d];
  if (spec.withId) e.eventId = id;
  switch (spec.action) {
    case 'ListBuckets':
      break;
    case 'HeadBucket':
      e.bucket = spec.bucket;
      break;
    case 'DeleteObject':
      Object.assign(e, { bucket: spec.bucket, objectKey: 'k' });
      break;
    case 'UploadPart':
      Object.assign(e, { bucket: spec.bucket, uploadId: 'u', partNumber: 1, bytes: spec.bytes });
      break;
    case 'UploadPartCopy':
      Object.assign(e, { bucket: spec.bucket, uploadId: 'u', partNumber: 2 }, spec.billable ? { bytes: spec.bytes } : {});
      break;
    default:
      Object.assign(e, { bucket: spec.bucket, objectKey: 'k', bytes: spec.bytes });
      if (spec.action === 'GetObject' && spec.billable !== undefined) e.isBillableEgress = spec.billable;
  }
  return e;
}

const workloadArb = fc.record({
  specs: fc.array(specArb, { minLength: 1, maxLength: 120 }),
  /** Indexes of events sent again (a retry), possibly with other bytes: the first stored copy counts. */
  resend: fc.array(fc.tuple(fc.nat(), fc.boolean()), { maxLength: 30 }),
  seed: fc.integer(),
  batch: fc.integer({ min: 1, max: 40 }),
});

const filterArb = fc.dictionary(
  fc.constantFrom(...DIMS),
  fc.constant(null),
  { maxKeys: 2 },
).chain((dims) =>
  fc.record(
    Object.fromEntries(
      Object.keys(dims).map((d) => [d, fc.subarray(['', ...(d === 'action' ? ACTIONS : POOLS[d as Exclude<Dim, 'action'>])], { minLength: 1, maxLength: 3 })]),
    ) as Record<string, fc.Arbitrary<string[]>>,
  ),
);

const queryArb: fc.Arbitrary<RefQuery> = fc.record({
  from: fc.constant(FROM),
  to: fc.constant(TO),
  granularity: fc.constantFrom(...GRANULARITIES),
  timeZone: fc.constantFrom(...ZONES),
  groupBy: fc.shuffledSubarray([...DIMS], { maxLength: 3 }),
  filters: filterArb,
});



/** Every page of a usage answer, its rows checked for window bounds and order, keyed as reference() keys them. */
async function fetchUsage(url: string, key: string, q: RefQuery, limit?: number): Promise<Map<string, bigint[]>> {
  const rows: Record<string, unknown>[] = [];
  let cursor: string | null = null;
  do {
    const extra: Record<string, string> = limit === undefined ? {} : { limit: String(limit) };
    if (cursor !== null) extra.cursor = cursor;
    const reply = await request(`${url}/v1/usage?${queryString(q, extra)}`, { key });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.json.groupBy, q.groupBy);
    if (limit !== undefined) assert.ok(reply.json.rows.length <= limit);
    rows.push(...reply.json.rows);
    cursor = reply.json.nextCursor;
  } while (cursor !== null);
  const out = new Map<string, bigint[]>();
  let previous: string | undefined;
  for (const row of rows) {
    const start = at(row.start as string);
    const end = at(row.end as string);
    assert.ok(start >= q.from && end <= q.to && start < end, `window ${row.start}..${row.end} within the range`);
    if (q.granularity !== 'none') {
      assert.ok(start === q.from || isWindowStart(q.granularity, q.timeZone, start), `${row.start} starts a ${q.granularity} in ${q.timeZone}`);
      assert.ok(end === q.to || isWindowStart(q.granularity, q.timeZone, end), `${row.end} ends a ${q.granularity} in ${q.timeZone}`);
      assert.equal(windowLabel(q.granularity, q.timeZone, end - 1), windowLabel(q.granularity, q.timeZone, start), 'one window per row');
    } else {
      assert.deepEqual([start, end], [q.from, q.to]);
    }
    const values = q.groupBy.map((d) => row[d] as string | null);
    const sortKey = JSON.stringify([row.start, ...values.map((v) => (v === null ? '' : `~${v}`))]);
    if (previous !== undefined) assert.ok(previous < sortKey, `rows ordered: ${previous} before ${sortKey}`);
    previous = sortKey;
    const measures = MEASURE_NAMES.map((m) => BigInt(row[m] as number));
    assert.ok(measures.some((m) => m !== 0n), 'rows with all measures zero are left out');
    const label = windowLabel(q.granularity, q.timeZone, start);
    const k = `${label}|${JSON.stringify(values)}`;
    assert.ok(!out.has(k), `one row per window and group: ${k}`);
    out.set(k, measures);
  }
  return out;
}


for (const backend of BACKENDS) {
  describe(`usage (${backend.name})`, { skip: backend.skip }, () => {
    let server: ServerProcess;
    let storeArgs: string[];
    let tenants = 0;
    const newKey = () => createKey(`usage-${++tenants}`, storeArgs);
    /** A new tenant sent `n` valid generated events (seeded), and the events it counts. */
    const sendSample = async (n: number, seed: number) => {
      const key = await newKey();
      const specs = fc.sample(specArb, { numRuns: n, seed }).map((s) => ({ ...s, invalid: false }));
      const sent = specs.map((spec, i) => ({ event: wire(spec, `s${seed}-${i}`), valid: true }));
      await send(server.url, key, sent.map((s) => s.event), 100);
      return { key, events: countedEvents(sent) };
    };

    before(async () => {
      storeArgs = await backend.fresh();
      server = await startServer({ args: storeArgs });
    });
    after(async () => {
      await server.stop();
      await dropFreshStores();
    });

    it('equals the reference model for generated workloads, queries and arrival orders', async () => {
      await fc.assert(
        fc.asyncProperty(workloadArb, fc.array(queryArb, { minLength: 6, maxLength: 10 }), async (w, queries) => {
          const key = await newKey();
          const sent: { event: WireEvent; valid: boolean }[] = w.specs.map((spec, i) => ({ event: wire(spec, `e-${i}`), valid: !spec.invalid }));
          for (const [n, changed] of w.resend) {
            const original = sent[n % sent.length]!;
            const copy = { ...original.event, ...(changed && typeof original.event.bytes === 'number' ? { bytes: (original.event.bytes as number) + 1 } : {}) };
            sent.push({ event: copy, valid: original.valid });
          }
          const arrival = shuffle(sent, w.seed);
          await send(server.url, key, arrival.map((s) => s.event), w.batch);
          const events = countedEvents(arrival);
          for (const q of queries) {
            assert.deepEqual(Object.fromEntries(await fetchUsage(server.url, key, q)), Object.fromEntries(reference(events, q)), `query ${queryString(q)}`);
          }
          // Paged with a small limit: the same rows.
          const q = queries[0]!;
          assert.deepEqual(Object.fromEntries(await fetchUsage(server.url, key, q, 3)), Object.fromEntries(reference(events, q)));
          // Receipts add up, and agree with the events and every rollup shape.
          const tomorrow = Math.floor(Date.now() / 86_400_000 + 1) * 86400;
          const reconcile = await request(`${server.url}/v1/usage/reconcile?from=${iso(FROM)}&to=${iso(tomorrow)}`, { key });
          assert.equal(reconcile.status, 200, reconcile.text);
          assert.deepEqual(reconcile.json.differences, []);
          const total = (field: string) => reconcile.json.days.reduce((sum: number, d: Record<string, number>) => sum + d[field]!, 0);
          assert.equal(total('received'), sent.length);
          assert.equal(total('stored'), events.length);
          assert.equal(total('rejected'), sent.filter((s) => !s.valid).length);
          assert.equal(total('duplicates'), sent.length - events.length - sent.filter((s) => !s.valid).length);
          assert.equal(total('requests'), events.length);
        }),
        { numRuns: 6 },
      );
    });

    it('groups by every dimension, over DST days in both zones', async () => {
      const { key, events } = await sendSample(300, 42);
      for (const zone of ['Europe/Berlin', 'America/New_York']) {
        for (const d of DIMS) {
          const q: RefQuery = { from: FROM, to: TO, granularity: 'day', timeZone: zone, groupBy: [d], filters: {} };
          const expected = reference(events, q);
          assert.deepEqual(Object.fromEntries(await fetchUsage(server.url, key, q)), Object.fromEntries(expected), `${zone} ${d}`);
        }
      }
      // The DST days are 23 and 25 hours long.
      const q = `from=2026-03-29T00:00:00Z&to=2026-03-31T00:00:00Z&granularity=day&timeZone=Europe/Berlin`;
      const reply = await request(`${server.url}/v1/usage?${q}`, { key });
      const lengths = reply.json.rows.map((r: { start: string; end: string }) => (at(r.end) - at(r.start)) / 3600);
      assert.ok(lengths.includes(22) || lengths.includes(23), `a 23-hour day (cut to the range) among ${lengths}`);
      const autumn = await request(`${server.url}/v1/usage?from=2026-10-24T22:00:00Z&to=2026-10-25T23:00:00Z&granularity=day&timeZone=Europe/Berlin`, { key });
      assert.deepEqual(autumn.json.rows.map((r: { start: string; end: string }) => [r.start, r.end]), [['2026-10-24T22:00:00Z', '2026-10-25T23:00:00Z']], '25 hours');
    });

    it('answers from day shapes with edge hours exactly as the events say, in every zone and with filters', async () => {
      const { key, events } = await sendSample(400, 7);
      // Ranges whose ends are near (added hours) and far past (hours taken away) a UTC midnight.
      const ranges = [
        [FROM, TO],
        [FROM + 5 * 3600, TO - 7 * 3600],
        [at('2026-03-07T13:00:00Z'), at('2026-03-30T11:00:00Z')],
        [at('2026-10-20T18:00:00Z'), at('2026-11-03T18:00:00Z')],
      ];
      // Each day shape (tenant_day, customer_day, feature_day, client_day), and sets no day shape keeps.
      const groups: Dim[][] = [[], ['customerId'], ['customerId', 'featureId', 'action'], ['clientId'], ['provider', 'action'], ['customerId', 'clientType']];
      const filterSets: RefQuery['filters'][] = [
        {},
        { customerId: ['c1'] },
        { customerId: ['', 'c2'], action: ['GetObject', 'PutObject'] },
        // Filters no stored shape keeps: bucket is read from the events.
        { bucket: ['media'] },
        { clientType: [''] },
        // A day shape's dimension filtered to one value is fixed (each row one answer row); to two, summed.
        { customerId: ['c1', 'c2'] },
        { customerId: ['c3'], featureId: ['f1'] },
      ];
      const cases: [string, string][] = [
        ['UTC', 'day'],
        ['UTC', 'none'],
        ['Europe/Berlin', 'day'],
        ['America/New_York', 'month'],
        ['Asia/Kolkata', 'none'],
      ];
      let n = 0;
      for (const [from, to] of ranges) {
        for (const [timeZone, granularity] of cases) {
          for (const groupBy of groups) {
            const filters = filterSets[n++ % filterSets.length]!;
            const q: RefQuery = { from: from!, to: to!, granularity: granularity as RefQuery['granularity'], timeZone, groupBy, filters };
            assert.deepEqual(Object.fromEntries(await fetchUsage(server.url, key, q)), Object.fromEntries(reference(events, q)), queryString(q));
          }
        }
      }
      // UTC days with no edge hours, where a day shape's rows may each be an answer row: every pair.
      for (const groupBy of groups) {
        for (const filters of filterSets) {
          const q: RefQuery = { from: FROM, to: TO, granularity: 'day', timeZone: 'UTC', groupBy, filters };
          assert.deepEqual(Object.fromEntries(await fetchUsage(server.url, key, q)), Object.fromEntries(reference(events, q)), queryString(q));
        }
      }
    });

    it('a late event changes the past hours it belongs to', async () => {
      const key = await newKey();
      const q = `from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z&granularity=hour`;
      const event = { action: 'GetObject', timestamp: '2026-03-01T05:30:00Z', provider: 'aws', bucket: 'b', objectKey: 'k', bytes: 10 };
      await request(`${server.url}/s3`, { key, body: event });
      const first = await request(`${server.url}/v1/usage?${q}`, { key });
      assert.deepEqual(first.json.rows, [{ start: '2026-03-01T05:00:00Z', end: '2026-03-01T06:00:00Z', requests: 1, readBytes: 10, billableEgressBytes: 10, writtenBytes: 0 }]);
      await request(`${server.url}/s3`, { key, body: { ...event, bytes: 5, isBillableEgress: false } });
      const second = await request(`${server.url}/v1/usage?${q}`, { key });
      assert.deepEqual(second.json.rows, [{ start: '2026-03-01T05:00:00Z', end: '2026-03-01T06:00:00Z', requests: 2, readBytes: 15, billableEgressBytes: 10, writtenBytes: 0 }]);
      // Another tenant sees none of it.
      const other = await newKey();
      assert.deepEqual((await request(`${server.url}/v1/usage?${q}`, { key: other })).json.rows, []);
    });

    it('answers CSV for format=csv and for Accept: text/csv', async () => {
      const key = await newKey();
      await request(`${server.url}/s3`, { key, body: { action: 'PutObject', timestamp: '2026-03-01T05:30:00Z', provider: 'aws', bucket: 'b,1', objectKey: 'k', bytes: 7 } });
      const q = `from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z&groupBy=bucket,customerId`;
      const expected = 'start,end,bucket,customerId,requests,readBytes,billableEgressBytes,writtenBytes\r\n2026-03-01T00:00:00Z,2026-03-02T00:00:00Z,"b,1",,1,0,0,7\r\n';
      const byFormat = await request(`${server.url}/v1/usage?${q}&format=csv`, { key });
      assert.match(byFormat.headers.get('content-type')!, /^text\/csv/);
      assert.equal(byFormat.text, expected);
      const byAccept = await request(`${server.url}/v1/usage?${q}`, { key, headers: { accept: 'text/csv' } });
      assert.equal(byAccept.text, expected);
    });

    it('refuses bad parameters with a 400 naming each one', async () => {
      const key = await newKey();
      const bad = await request(`${server.url}/v1/usage?from=2026-03-01T00:30:00Z&to=yesterday&granularity=week&timeZone=Mars/Olympus&groupBy=customerId,planet&action=Teleport&format=xml&limit=0&colour=red`, { key });
      assert.equal(bad.status, 400);
      assert.match(bad.headers.get('content-type')!, /application\/problem\+json/);
      assert.equal(bad.json.code, 'BM_ERR_QUERY_INVALID');
      const named = new Set(bad.json.errors.map((e: { path: string }) => e.path));
      for (const p of ['from', 'to', 'granularity', 'timeZone', 'groupBy', 'action', 'format', 'limit', 'colour']) assert.ok(named.has(`/${p}`), `${p} named in ${[...named]}`);
      const missing = await request(`${server.url}/v1/usage`, { key });
      assert.deepEqual(missing.json.errors.map((e: { path: string }) => e.path), ['/from', '/to']);
      const long = await request(`${server.url}/v1/usage?from=2025-01-01T00:00:00Z&to=2026-03-01T00:00:00Z`, { key });
      assert.equal(long.status, 400);
      assert.match(long.json.errors[0].message, /400 days/);
      const kolkata = await request(`${server.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-03T00:00:00Z&granularity=day&timeZone=Asia/Kolkata`, { key });
      assert.equal(kolkata.status, 400);
      assert.equal(kolkata.json.code, 'BM_ERR_USAGE_ZONE_NOT_EXACT');
      assert.match(kolkata.json.detail, /\+5:30.*cannot be answered exactly/);
      const whole = await request(`${server.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-03T00:00:00Z&timeZone=Asia/Kolkata`, { key });
      assert.equal(whole.status, 200, 'granularity=none has no zone windows to cut');
      const cursor = await request(`${server.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-03T00:00:00Z&cursor=nope`, { key });
      assert.equal(cursor.status, 400);
      assert.equal(cursor.json.errors[0].path, '/cursor');
    });
  });
}
