/**
 * Queries that no stored hourly shape keeps (bucket, clientId; featureId, clientType or provider beside
 * a customer by the hour; the edge hours of a day shape that keeps clientId or featureId) are answered
 * from the events themselves (usage/shapes.ts EVENTS), and equal the reference model. They count the
 * folded events only, as the rollups do: with events stored and not folded yet, an answer whose days
 * come from a rollup and whose edge hours come from the events counts one set of events. Both stores,
 * read by their readers directly (a store's read folds first, so nothing would be pending).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { PostgresUsageReads } from '../../src/store/postgres/usage.js';
import { UsageReader } from '../../src/store/sqlite/usage.js';
import type { Store, UsageColumns, UsageStoreQuery } from '../../src/store/types.js';
import { columnRows } from '../../src/store/usage-columns.js';
import { planUsage } from '../../src/usage/shapes.js';
import type { Dimension } from '../../src/usage/shapes.js';
import { windowBounds } from '../../src/usage/windows.js';
import type { Granularity } from '../../src/usage/windows.js';
import { BACKENDS, openedBackends } from '../support/backends.js';
import { eventsRowsScanned } from '../support/explain.js';
import type { OpenedStore } from '../support/backends.js';
import { T0, newTenant } from '../store/contract.js';
import { countedEvents, reference, windowLabel } from './reference.js';
import type { RefEvent, RefQuery } from './reference.js';
import { attachDerived } from '../../src/store/sqlite/derived.js';

const H0 = T0 / 3600;
const DAYS = 4;

/** A small deterministic generator (the same events on both stores). */
function rng(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    // xorshift32.
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return Math.floor((s / 2 ** 32) * n);
  };
}

/**
 * `n` events over DAYS days from T0, every dimension sometimes absent; a third of them exactly on an
 * hour's first second or on its last, where an off-by-one in a range would move them.
 */
function events(n: number, seed: number): Record<string, unknown>[] {
  const pick = rng(seed);
  const maybe = <T>(values: T[]) => (pick(4) === 0 ? undefined : values[pick(values.length)]);
  return Array.from({ length: n }, () => {
    const hour = H0 + pick(DAYS * 24);
    const at = [hour * 3600, hour * 3600 + 3599, hour * 3600 + 1 + pick(3598)][pick(3)]!;
    const action = (['GetObject', 'PutObject', 'HeadObject', 'ListBuckets'] as const)[pick(4)]!;
    const event: Record<string, unknown> = { action, timestamp: at, provider: ['aws', 'wasabi'][pick(2)] };
    if (action !== 'ListBuckets') Object.assign(event, { bucket: ['b1', 'b2', 'b3'][pick(3)], objectKey: `k${pick(5)}` });
    if (action === 'GetObject' || action === 'PutObject') event.bytes = 1 + pick(1_000_000);
    if (action === 'GetObject' && pick(3) === 0) event.isBillableEgress = false;
    const dims = { customerId: maybe(['c1', 'c2', 'c3']), featureId: maybe(['f1', 'f2']), clientType: maybe(['web', 'cli']), clientId: maybe(['d1', 'd2', 'd3', 'd4']) };
    for (const [d, v] of Object.entries(dims)) if (v !== undefined) event[d] = v;
    return event;
  });
}

const asRef = (sent: Record<string, unknown>[]): RefEvent[] =>
  countedEvents(sent.map((e) => ({ event: { ...e, timestamp: new Date((e.timestamp as number) * 1000).toISOString() }, valid: true })));

const q = (granularity: Granularity, timeZone: string, fromHour: number, toHour: number, groupBy: Dimension[], filters: RefQuery['filters'] = {}): RefQuery => ({
  from: (H0 + fromHour) * 3600,
  to: (H0 + toHour) * 3600,
  granularity,
  timeZone,
  groupBy,
  filters,
});

/** Each routed to the events, some for every hour, some for a day shape's edge hours only. */
const QUERIES: { query: RefQuery; shapes: string[] }[] = [
  { query: q('hour', 'UTC', 0, DAYS * 24, ['bucket']), shapes: ['events'] },
  { query: q('hour', 'UTC', 3, 50, ['customerId', 'featureId']), shapes: ['events'] },
  { query: q('hour', 'UTC', 0, DAYS * 24, ['customerId', 'clientType']), shapes: ['events'] },
  { query: q('hour', 'UTC', 10, 70, ['provider', 'customerId'], { customerId: ['c1', ''] }), shapes: ['events'] },
  { query: q('day', 'UTC', 0, DAYS * 24, ['clientId'], { bucket: ['b2', ''] }), shapes: ['events'] },
  { query: q('none', 'UTC', 1, 95, ['bucket', 'clientId', 'action'], { featureId: [''] }), shapes: ['events'] },
  // Berlin days: each a UTC day (client_day, feature_day), plus the UTC hour before it, minus its own last one (from the events).
  { query: q('day', 'Europe/Berlin', 23, 71, ['clientId']), shapes: ['client_day', 'events'] },
  { query: q('day', 'Europe/Berlin', 23, 95, ['customerId', 'clientId'], { customerId: ['c2', ''] }), shapes: ['client_day', 'events'] },
  { query: q('none', 'UTC', 5, 91, ['customerId', 'featureId', 'action']), shapes: ['feature_day', 'events'] },
  { query: q('none', 'UTC', 20, 76, ['featureId'], { customerId: ['c3'] }), shapes: ['feature_day', 'events'] },
];

/** A reader's answer as the reference model keys it: label|values → measures, rows of all zeros left out. */
function keyed(columns: UsageColumns, query: RefQuery, bounds: number[]): Map<string, bigint[]> {
  const out = new Map<string, bigint[]>();
  for (const row of columnRows(columns)) {
    if (row.measures.every((m) => m === 0n)) continue;
    out.set(`${windowLabel(query.granularity, query.timeZone, bounds[row.window]! * 3600)}|${JSON.stringify(row.values)}`, row.measures);
  }
  return out;
}

type Read = (tenantId: number, query: UsageStoreQuery) => Promise<UsageColumns>;

/** The reader of the store's data, without the store's fold before it; and its close. */
async function readerOf(opened: OpenedStore): Promise<{ read: Read; close(): Promise<void> }> {
  if (opened.data.backend === 'sqlite') {
    const db = new Database(opened.data.path, { readonly: true });
    attachDerived(db, opened.data.path);
    const reader = new UsageReader(db);
    return { read: async (tenantId, query) => reader.query(tenantId, query), close: async () => {
        db.close();
      },
    };
  }
  const pool = new pg.Pool({ connectionString: opened.data.url, max: 2 });
  const reads = new PostgresUsageReads(pool, (run) => run());
  return { read: (tenantId, query) => reads.query(tenantId, query), close: () => pool.end() };
}

async function assertAnswers(read: Read, tenantId: number, counted: RefEvent[], what: string): Promise<void> {
  for (const { query, shapes } of QUERIES) {
    const bounds = windowBounds(query.from / 3600, query.to / 3600, query.granularity as Granularity, query.timeZone);
    const terms = planUsage([...query.groupBy, ...(Object.keys(query.filters) as Dimension[])], bounds);
    const name = `${what}: ${query.granularity} ${query.timeZone} by ${query.groupBy.join(',')} ${JSON.stringify(query.filters)}`;
    assert.deepEqual(
      terms.map((t) => t.shape.name),
      shapes,
      name,
    );
    const expected = reference(counted, query);
    assert.ok(expected.size > 0, `${name}: rows expected`);
    assert.deepEqual(keyed(await read(tenantId, { terms, groupBy: query.groupBy, filters: query.filters }), query, bounds), expected, name);
  }
}

for (const backend of openedBackends('events-source')) {
  describe(`usage from the events (${backend.name})`, { skip: backend.skip }, () => {
    let opened: OpenedStore;
    let store: Store;
    before(async () => {
      opened = await backend.open();
      store = opened.store;
    });
    after(() => opened?.close());

    it('answers what no stored hourly shape keeps from the folded events only: pending events count in no term until folded', async () => {
      const tenantId = (await newTenant(store)).tenantId;
      const other = (await newTenant(store)).tenantId;
      const commit = (tenant: number, sent: Record<string, unknown>[]) =>
        store.commit({ events: sent.map((e) => ({ tenantId: tenant, receivedAt: T0 + DAYS * 86400, event: e as unknown as NormalizedEvent })), quarantine: [] });
      const folded = events(900, 1);
      await commit(tenantId, folded);
      // Another tenant's events in the same hours: never in this tenant's answers.
      await commit(other, events(300, 2));
      await store.usage.catchUp();
      const pending = events(400, 3);
      await commit(tenantId, pending);
      assert.equal((await store.usage.lag()).pendingEvents, pending.length, 'stored, not folded');
      const reader = await readerOf(opened);
      try {
        await assertAnswers(reader.read, tenantId, asRef(folded), 'with events pending');
        await store.usage.catchUp();
        await assertAnswers(reader.read, tenantId, asRef([...folded, ...pending]), 'once folded');
      } finally {
        await reader.close();
      }
    });
  });
}

describe('usage from the events while many commits wait to be folded (postgres)', { skip: BACKENDS[1]!.skip }, () => {
  let opened: OpenedStore;
  before(async () => {
    opened = await openedBackends('events-pending')[1]!.open();
  });
  after(() => opened?.close());

  // Each pending outbox row used to be compared with every event read (an anti join over the
  // pending rows): 1,000 single-event commits waiting made 30 days by bucket 40–60 times slower.
  it('reads a month by bucket about as fast with 1,000 outbox rows pending as with none', async () => {
    const { store } = opened;
    const tenantId = (await newTenant(store)).tenantId;
    const event = (i: number, at: number) => ({ tenantId, receivedAt: at, event: { action: 'GetObject', timestamp: at, provider: 'aws', bucket: `b${i % 7}`, objectKey: 'k', bytes: 10 } as unknown as NormalizedEvent });
    const FOLDED = 20_000;
    for (let b = 0; b < FOLDED; b += 5000) {
      await store.commit({ events: Array.from({ length: 5000 }, (_, k) => event(b + k, T0 + Math.floor(((b + k) / FOLDED) * 29 * 86400))), quarantine: [] });
    }
    // As many again two months later: a read of the month's spans must not read them.
    for (let b = 0; b < FOLDED; b += 5000) {
      await store.commit({ events: Array.from({ length: 5000 }, (_, k) => event(b + k, T0 + 60 * 86400 + Math.floor(((b + k) / FOLDED) * 29 * 86400))), quarantine: [] });
    }
    await store.usage.catchUp();
    const PENDING = 1000;
    // Single-event commits, four at a time: an outbox row each, in the range's last day.
    await Promise.all([0, 1, 2, 3].map(async (k) => {
      for (let i = k; i < PENDING; i += 4) await store.commit({ events: [event(i, T0 + 29 * 86400 + i)], quarantine: [] });
    }));
    assert.equal((await store.usage.lag()).pendingEvents, PENDING, 'stored, not folded');
    const pool = new pg.Pool({ connectionString: (opened.data as { url: string }).url, max: 2 });
    try {
      // The events rows the read's statement scanned: the month's, not the tenant's 41,000.
      const query0 = pool.query.bind(pool) as (config: pg.QueryConfig | string, values?: unknown[]) => Promise<pg.QueryResult>;
      let read: pg.QueryConfig | undefined;
      (pool as unknown as { query: typeof query0 }).query = (config, values) => {
        if (typeof config === 'object' && config.text.includes('FROM events')) read = config;
        return query0(config, values);
      };
      const eventsScanned = () => eventsRowsScanned(query0, read!);
      const reads = new PostgresUsageReads(pool, (run) => run());
      const query = q('day', 'UTC', 0, 30 * 24, ['bucket']);
      const terms = planUsage(['bucket'], windowBounds(query.from / 3600, query.to / 3600, 'day', 'UTC'));
      const timedRead = async (): Promise<{ ms: number; requests: bigint }> => {
        const t0 = performance.now();
        const answer = await reads.query(tenantId, { terms, groupBy: ['bucket'], filters: {} });
        const requests = columnRows(answer).reduce((n, row) => n + row.measures[0]!, 0n);
        return { ms: performance.now() - t0, requests };
      };
      const median = async (expected: number) => {
        const runs = [];
        for (let k = 0; k < 3; k++) runs.push(await timedRead());
        for (const r of runs) assert.equal(r.requests, BigInt(expected), 'the folded events only');
        return runs.map((r) => r.ms).sort((a, b) => a - b)[1]!;
      };
      const pending = await median(FOLDED);
      const inSpans = async (what: string) => {
        const scanned = await eventsScanned();
        assert.ok(scanned >= FOLDED + PENDING && scanned <= 1.1 * (FOLDED + PENDING), `${what}: ${scanned} events rows scanned, ${FOLDED + PENDING} in its spans`);
      };
      await inSpans('with rows pending');
      await store.usage.catchUp();
      const none = await median(FOLDED + PENDING);
      await inSpans('with none pending');
      assert.ok(pending < 8 * none + 50, `with ${PENDING} outbox rows pending ${pending.toFixed(0)} ms, with none ${none.toFixed(0)} ms`);
    } finally {
      await pool.end();
    }
  });
});
