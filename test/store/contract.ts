/**
 * The contract of each store port (types.ts), as tests every backend runs: test/store/<backend>.test.ts
 * calls storeContract, which runs one suite per port, each seeing only its port (and keys, to make
 * tenants).
 * The database may hold other data and other suites may use it at the same time: every test works
 * in tenants of its own (random names) and asserts only about what it wrote.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ACTION_NAMES, KINDS, MAX_EVENT_BYTES, SERVER_EVENT_ID_PREFIX } from '../../src/events/catalogue.js';
import type { ActionName, EventOf, FieldName, FieldValue, NormalizedEvent } from '../../src/events/catalogue.js';
import type { FieldError } from '../../src/events/field-error.js';
import { InvalidCursorError, StoreUnavailableError } from '../../src/store/types.js';
import { columnRows } from '../../src/store/usage-columns.js';
import { planUsage } from '../../src/usage/shapes.js';
import { countedEvents, reference, windowLabel } from '../usage/reference.js';
import type { Dim, RefEvent, RefQuery } from '../usage/reference.js';
import type {
  ApiKeyRecord, CommitUnit, EventLog, EventOutcome, EventQuery, EventToStore, Health, InventoryStore, JobOwnership, KeyStore, QuarantineEntry,
  QuarantineInput, QuarantineStore, Store, StoredEvent, UsageStore,
} from '../../src/store/types.js';

export interface OpenedStore {
  store: Store;
  /** Closes the store (if still open) and removes whatever open() created. */
  cleanup(): Promise<void>;
}

export interface ContractOptions {
  /** Test title → why this backend skips it. */
  skip?: Record<string, string>;
}

/** 2024-05-01T00:00:00Z: event times in these tests sit around it. */
export const T0 = 1_714_521_600;

/** A concrete value for every kind-specific field: strings carry the kind, to catch rows mixed up. */
function fieldValue(field: FieldName, kind: ActionName): unknown {
  const values: { [K in FieldName]: FieldValue<K> } = {
    bucket: `photos-eu-${kind}`,
    objectKey: `albums/2024/été/日本-${kind}.jpg`,
    versionId: `3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY-${kind}`,
    bytes: MAX_EVENT_BYTES,
    isBillableEgress: false,
    objectCategory: `image-${kind}`,
    fileType: `image/jpeg-${kind}`,
    isSynthetic: true,
    copySource: { bucket: 'photos-us', objectKey: `albums/source-${kind}.jpg`, versionId: 'v-source-1' },
    resultingDeleteMarkerVersionId: `dm-${kind}`,
    hardDeletedVersionId: `hd-${kind}`,
    deletedObjects: [
      { objectKey: 'a.txt', resultingDeleteMarkerVersionId: 'dm-a' },
      { objectKey: 'b.txt', hardDeletedVersionId: 'hd-b' },
      { objectKey: 'c/ü.txt' },
    ],
    objectKeyPrefix: `albums/${kind}/`,
    uploadId: `upload-${kind}-VXBsb2FkSWQ`,
    partNumber: 10000,
    force: true,
  };
  return values[field];
}

/** An event of `kind` with every field the catalogue allows it, and unknown extra fields. */
export function fullEvent(kind: ActionName, timestamp: number, eventId?: string): NormalizedEvent {
  const event: Record<string, unknown> = {
    action: kind,
    timestamp,
    provider: 'wasabi',
    customerId: `customer-${kind}`,
    featureId: 'feature-sync',
    clientType: 'desktop',
    clientId: `device-${kind}`,
    extra: { serviceId: 'svc-9', x: 'an extra named x', nested: { list: [1, 'two', null, 3.5], on: true }, emoji: 'ü😀' },
  };
  if (eventId !== undefined) event.eventId = eventId;
  for (const field of [...KINDS[kind].required, ...KINDS[kind].optional]) event[field] = fieldValue(field, kind);
  return event as unknown as NormalizedEvent;
}

/** An event of `kind` with its required fields only. */
export function minimalEvent(kind: ActionName, timestamp: number): NormalizedEvent {
  const event: Record<string, unknown> = { action: kind, timestamp, provider: 'aws' };
  for (const field of KINDS[kind].required) event[field] = fieldValue(field, kind);
  return event as unknown as NormalizedEvent;
}

/** A small GetObject, the bulk of real traffic. */
export function getObject(timestamp: number, fields: Partial<EventOf<'GetObject'>> = {}): EventOf<'GetObject'> {
  return { action: 'GetObject', timestamp, provider: 'aws', bucket: 'b', objectKey: 'k', bytes: 1, isBillableEgress: true, ...fields };
}

export async function newTenant(store: { keys: KeyStore }): Promise<ApiKeyRecord> {
  return store.keys.create({
    id: `key_${randomBytes(8).toString('hex')}`,
    tenantName: `tenant-${randomUUID()}`,
    hash: randomBytes(32),
    createdAt: T0,
  });
}

const at = (tenantId: number, receivedAt: number, event: NormalizedEvent): EventToStore => ({ tenantId, receivedAt, event });

const unit = (events: EventToStore[], quarantine: QuarantineInput[] = [], replayed?: CommitUnit['replayed']): CommitUnit =>
  replayed === undefined ? { events, quarantine } : { events, quarantine, replayed };

/** What listEvents returns for a committed event. */
const stored = (e: EventToStore, outcome: EventOutcome): StoredEvent => ({ ...e.event, eventId: outcome.eventId, receivedAt: e.receivedAt });

/** Every event of a tenant matching the query, newest first, walking all pages. */
export async function listAll(store: EventLog, tenantId: number, query: Omit<EventQuery, 'limit' | 'cursor'> = {}, limit = 1000): Promise<StoredEvent[]> {
  const all: StoredEvent[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await store.listEvents(tenantId, cursor === undefined ? { ...query, limit } : { ...query, limit, cursor });
    all.push(...page.events);
    if (page.nextCursor === null) return all;
    cursor = page.nextCursor;
  }
}

const ids = (events: { eventId: string }[]): string[] => events.map((e) => e.eventId);

/** Listing order: newest arrival first (`events` is in that order); with from or to, newest timestamp first, then newest arrival. */
const byTime = (query: Pick<EventQuery, 'from' | 'to'>, events: StoredEvent[]): StoredEvent[] =>
  query.from === undefined && query.to === undefined ? events : events.map((e, i) => ({ e, i })).sort((x, y) => y.e.timestamp - x.e.timestamp || x.i - y.i).map(({ e }) => e);

const fieldErrors: FieldError[] = [
  { path: '/bytes', message: 'must be a non-negative integer', expected: 'integer ≥ 0', received: 'string "12"' },
  { path: '', message: 'unknown action', expected: 'one of the catalogue kinds', received: 'string "Unknown"' },
];

type EventLogUnderTest = EventLog & { keys: KeyStore };
type KeysUnderTest = { keys: KeyStore };
type QuarantineUnderTest = EventLog & { keys: KeyStore; quarantine: QuarantineStore };
type HealthUnderTest = Health & EventLog & { keys: KeyStore; close(): Promise<void> };
type JobsUnderTest = JobOwnership & { close(): Promise<void> };
type VersionUnderTest = EventLog & { keys: KeyStore; usage: UsageStore; inventory: InventoryStore };

/** Every port's contract on one backend. */
export function storeContract(name: string, open: () => Promise<OpenedStore>, options: ContractOptions = {}): void {
  const titles = new Set<string>();
  eventLogContract(name, open, options, titles);
  keysContract(name, open, options, titles);
  quarantineContract(name, open, options, titles);
  healthContract(name, open, options, titles);
  jobsContract(name, open, options, titles);
  versionContract(name, open, options, titles);
  usageContract(name, open, options, titles);
  // A misspelt skip would silently run the test: refuse it.
  for (const title of Object.keys(options.skip ?? {})) {
    if (!titles.has(title)) throw new Error(`storeContract(${name}): no test titled ${JSON.stringify(title)} to skip`);
  }
}

/** A describe block on one opened store; `test` registers a test that sees the store as port P only. */
function portSuite<P>(
  title: string,
  open: () => Promise<OpenedStore>,
  options: ContractOptions,
  titles: Set<string>,
  body: (test: (title: string, run: (store: P) => Promise<void>) => void) => void,
): void {
  describe(title, () => {
    let opened: OpenedStore | undefined;
    before(async () => {
      opened = await open();
    });
    after(async () => {
      await opened?.cleanup();
    });
    body((name, run) => {
      titles.add(name);
      it(name, { skip: options.skip?.[name] ?? false }, () => run(opened!.store as P));
    });
  });
}

function eventLogContract(name: string, open: () => Promise<OpenedStore>, options: ContractOptions, titles: Set<string>): void {
  portSuite<EventLogUnderTest>(`event log contract: ${name}`, open, options, titles, (test) => {
    test('an empty unit commits', async (store) => {
      assert.deepEqual(await store.commit(unit([])), []);
    });

    test('an event of every kind, with every field, comes back exactly', async (store) => {
      const { tenantId } = await newTenant(store);
      const events = ACTION_NAMES.map((kind, i) => at(tenantId, T0 + 100 + i, fullEvent(kind, T0 + i, `full-${kind}-${randomUUID()}`)));
      const outcomes = await store.commit(unit(events));
      assert.deepEqual(outcomes, events.map((e) => ({ eventId: e.event.eventId, duplicate: false })));
      const expected = events.map((e, i) => stored(e, outcomes[i]!)).reverse();
      assert.deepEqual((await store.listEvents(tenantId, { limit: 1000 })).events, expected);
      // Spot checks of what must survive: the largest size accepted, non-ASCII text, JSON-column fields.
      const deleteObjects = expected.find((e) => e.action === 'DeleteObjects')!;
      assert.equal(deleteObjects.deletedObjects?.[2]?.objectKey, 'c/ü.txt');
      assert.equal(expected.find((e) => e.action === 'GetObject')!.bytes, 17_592_186_044_416);
      assert.equal(expected.find((e) => e.action === 'GetObject')!.isBillableEgress, false);
      assert.equal(expected.find((e) => e.action === 'PutObject')!.objectKey, 'albums/2024/été/日本-PutObject.jpg');
    });

    test('text that a database format must escape comes back exactly, in every kind of column', async (store) => {
      const { tenantId } = await newTenant(store);
      // Separators and escapes of PostgreSQL's COPY text and array literals, its escape mark U+0001,
      // SQL quotes, and characters outside the BMP.
      const awkward = ['tab\there', 'line\nbreak\r\n', 'back\\slash\\N', '"quoted", {braced}', "it's", '\u0001marked', 'NULL', '\\N', 'emoji 😀 ü'];
      const events = awkward.map((text, i) =>
        at(tenantId, T0, {
          action: 'CopyObject',
          timestamp: T0 + i,
          provider: 'aws',
          customerId: `customer ${text}`,
          clientId: text,
          eventId: `awkward-${i}-${randomUUID()} ${text.replace(/[^\x20-\x7e]/g, '?')}`,
          bucket: `bucket ${text}`,
          objectKey: text,
          versionId: `v ${text}`,
          copySource: { bucket: text, objectKey: `src ${text}` },
          extra: { note: text, [`key ${text}`]: [text] },
        }),
      );
      const outcomes = await store.commit(unit(events));
      assert.deepEqual(outcomes, events.map((e) => ({ eventId: e.event.eventId, duplicate: false })));
      assert.deepEqual(await listAll(store, tenantId), events.map((e, i) => stored(e, outcomes[i]!)).reverse());
    });

    test('an event of every kind, with required fields only, comes back without the others', async (store) => {
      const { tenantId } = await newTenant(store);
      const events = ACTION_NAMES.map((kind, i) => at(tenantId, T0 + 1, minimalEvent(kind, T0 + i)));
      const outcomes = await store.commit(unit(events));
      const listed = (await store.listEvents(tenantId, { limit: 1000 })).events;
      assert.deepEqual(listed, events.map((e, i) => stored(e, outcomes[i]!)).reverse());
      const listBuckets = listed.find((e) => e.action === 'ListBuckets')!;
      assert.deepEqual(Object.keys(listBuckets).sort(), ['action', 'eventId', 'provider', 'receivedAt', 'timestamp']);
    });

    test('server ids are unique and increase with arrival within each tenant', async (store) => {
      const a = await newTenant(store);
      const b = await newTenant(store);
      const first = [at(a.tenantId, T0, getObject(T0 + 50)), at(b.tenantId, T0, getObject(T0 + 10)), at(a.tenantId, T0, getObject(T0))];
      const second = [at(b.tenantId, T0 + 1, getObject(T0 - 100)), at(a.tenantId, T0 + 1, getObject(T0 + 1))];
      const outcomes = [...(await store.commit(unit(first))), ...(await store.commit(unit(second)))];
      const serverIds = ids(outcomes);
      for (const outcome of outcomes) {
        assert.equal(outcome.duplicate, false);
        assert.ok(outcome.eventId.startsWith(SERVER_EVENT_ID_PREFIX), outcome.eventId);
      }
      const ofA = [serverIds[0]!, serverIds[2]!, serverIds[4]!];
      const ofB = [serverIds[1]!, serverIds[3]!];
      for (const own of [ofA, ofB]) {
        assert.equal(new Set(own).size, own.length);
        assert.deepEqual([...own].sort(), own, 'string order is arrival order');
      }
      // Newest first by arrival, whatever the event timestamps say.
      assert.deepEqual(ids((await store.listEvents(a.tenantId, { limit: 10 })).events), [...ofA].reverse());
      assert.deepEqual(ids((await store.listEvents(b.tenantId, { limit: 10 })).events), [...ofB].reverse());
    });

    test("server ids tell a tenant nothing of other tenants' traffic", async (store) => {
      const a = await newTenant(store);
      const quiet = await newTenant(store);
      const b = await newTenant(store);
      const number = (id: string): number => parseInt(id.slice(SERVER_EVENT_ID_PREFIX.length), 36);
      const one = async (tenantId: number): Promise<number> => number((await store.commit(unit([at(tenantId, T0, getObject(T0))])))[0]!.eventId);
      const a1 = await one(a.tenantId);
      const q1 = await one(quiet.tenantId);
      // Between A's two events, B stores 3,000 events in 3 units; nothing happens between quiet's two.
      for (let u = 0; u < 3; u++) await store.commit(unit(Array.from({ length: 1000 }, () => at(b.tenantId, T0, getObject(T0)))));
      const a2 = await one(a.tenantId);
      const q2 = await one(quiet.tenantId);
      assert.equal(a2 - a1, q2 - q1, "the step between A's ids is the same with or without B's traffic");
    });

    test('a duplicate eventId inside one unit is reported and stored once', async (store) => {
      const { tenantId } = await newTenant(store);
      const id = `dup-${randomUUID()}`;
      const outcomes = await store.commit(
        unit([at(tenantId, T0, getObject(T0, { eventId: id, bytes: 1 })), at(tenantId, T0, getObject(T0, { eventId: id, bytes: 2 })), at(tenantId, T0, getObject(T0))]),
      );
      assert.deepEqual(outcomes.slice(0, 2), [{ eventId: id, duplicate: false }, { eventId: id, duplicate: true }]);
      assert.equal(outcomes[2]!.duplicate, false);
      const listed = (await store.listEvents(tenantId, { limit: 10 })).events;
      assert.deepEqual(ids(listed), [outcomes[2]!.eventId, id]);
      assert.equal(listed[1]!.bytes, 1, 'the first one is kept');
    });

    test('a duplicate eventId across units is reported and not stored again', async (store) => {
      const { tenantId } = await newTenant(store);
      const id = `dup-${randomUUID()}`;
      const other = `other-${randomUUID()}`;
      assert.deepEqual(await store.commit(unit([at(tenantId, T0, getObject(T0, { eventId: id, bytes: 1 }))])), [{ eventId: id, duplicate: false }]);
      const outcomes = await store.commit(unit([at(tenantId, T0 + 9, getObject(T0 + 9, { eventId: id, bytes: 2 })), at(tenantId, T0 + 9, getObject(T0, { eventId: other }))]));
      assert.deepEqual(outcomes, [{ eventId: id, duplicate: true }, { eventId: other, duplicate: false }]);
      const listed = (await store.listEvents(tenantId, { limit: 10 })).events;
      assert.deepEqual(ids(listed), [other, id]);
      assert.equal(listed[1]!.bytes, 1);
      assert.equal(listed[1]!.receivedAt, T0);
    });

    test('in a long unit, resent eventIds among many others are each reported, the others stored once and listed in arrival order', async (store) => {
      const { tenantId } = await newTenant(store);
      const earlier = Array.from({ length: 10 }, (_, i) => `earlier-${i}-${randomUUID()}`);
      await store.commit(unit(earlier.map((eventId) => at(tenantId, T0, getObject(T0, { eventId, bytes: 1 })))));
      // Runs of events with ids and without, long and short; resent: one stored by the unit before,
      // one earlier in this unit, and two together.
      const fresh = Array.from({ length: 60 }, (_, i) => `fresh-${i}-${randomUUID()}`);
      const resent = new Map([[3, earlier[2]!], [12, fresh[10]!], [44, earlier[5]!], [45, fresh[41]!]]);
      const events = fresh.map((id, i) => at(tenantId, T0 + 1, getObject(T0 + i, { eventId: i >= 20 && i < 30 ? undefined : (resent.get(i) ?? id), bytes: 100 + i })));
      const outcomes = await store.commit(unit(events));
      assert.deepEqual(outcomes.map((o, i) => o.duplicate || i), fresh.map((_, i) => resent.has(i) || i));
      const serverIds = ids(outcomes.slice(20, 30));
      assert.deepEqual([...serverIds].sort(), serverIds, 'server ids increase with arrival');
      const storedHere = outcomes.flatMap((o, i) => (o.duplicate ? [] : [{ id: o.eventId, bytes: 100 + i }]));
      const listed = (await store.listEvents(tenantId, { limit: 1000 })).events;
      assert.deepEqual(listed.map((e) => ({ id: e.eventId, bytes: e.bytes })), [...earlier.map((id) => ({ id, bytes: 1 })), ...storedHere].reverse());
    });

    test('the same eventId in two tenants is two events', async (store) => {
      const a = await newTenant(store);
      const b = await newTenant(store);
      const id = `shared-${randomUUID()}`;
      const outcomes = await store.commit(unit([at(a.tenantId, T0, getObject(T0, { eventId: id, bytes: 1 })), at(b.tenantId, T0, getObject(T0, { eventId: id, bytes: 2 }))]));
      assert.deepEqual(outcomes, [{ eventId: id, duplicate: false }, { eventId: id, duplicate: false }]);
      assert.deepEqual((await store.listEvents(a.tenantId, { limit: 10 })).events.map((e) => e.bytes), [1]);
      assert.deepEqual((await store.listEvents(b.tenantId, { limit: 10 })).events.map((e) => e.bytes), [2]);
    });

    test('concurrent commits all land, and a contested eventId is stored once', async (store) => {
      const { tenantId } = await newTenant(store);
      const id = `contested-${randomUUID()}`;
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, u) =>
          store.commit(unit([...Array.from({ length: 10 }, (_, i) => at(tenantId, T0, getObject(T0 + i, { bytes: u }))), at(tenantId, T0, getObject(T0, { eventId: id }))])),
        ),
      );
      const contested = results.map((outcomes) => outcomes[10]!);
      assert.equal(contested.filter((o) => !o.duplicate).length, 1);
      const serverIds = results.flatMap((outcomes) => ids(outcomes.slice(0, 10)));
      assert.equal(new Set(serverIds).size, 80);
      const listed = await listAll(store, tenantId);
      assert.equal(listed.length, 81);
      assert.deepEqual(new Set(ids(listed)), new Set([...serverIds, id]));
    });

    test('listEvents shows a tenant its own events only', async (store) => {
      const a = await newTenant(store);
      const b = await newTenant(store);
      const empty = await newTenant(store);
      const outcomes = await store.commit(unit([at(a.tenantId, T0, getObject(T0)), at(b.tenantId, T0, getObject(T0)), at(a.tenantId, T0, getObject(T0))]));
      assert.deepEqual(ids((await store.listEvents(a.tenantId, { limit: 10 })).events), [outcomes[2]!.eventId, outcomes[0]!.eventId]);
      assert.deepEqual(ids((await store.listEvents(b.tenantId, { limit: 10 })).events), [outcomes[1]!.eventId]);
      assert.deepEqual(await store.listEvents(empty.tenantId, { limit: 10 }), { events: [], nextCursor: null });
      assert.deepEqual(await store.listEvents(empty.tenantId, { limit: 10, customerId: 'c1', from: T0, to: T0 + 1 }), { events: [], nextCursor: null });
    });

    describe('filters', () => {
      // 24 events: actions alternate, customers cycle c1, c2, none; timestamps T0 .. T0+23 in a shuffled arrival order.
      const shape = Array.from({ length: 24 }, (_, i) => ({
        action: (i % 2 === 0 ? 'GetObject' : 'PutObject') as ActionName,
        customerId: [`c1`, `c2`, undefined][i % 3],
        timestamp: T0 + ((i * 7) % 24),
      }));
      let tenantId = 0;
      let all: StoredEvent[] = [];
      const fill = async (store: EventLogUnderTest): Promise<void> => {
        if (tenantId !== 0) return;
        const tenant = await newTenant(store);
        const suffix = randomUUID();
        const events = shape.map((s, i) => {
          const event = s.action === 'GetObject' ? getObject(s.timestamp) : { ...minimalEvent('PutObject', s.timestamp), bytes: i };
          if (s.customerId !== undefined) event.customerId = `${s.customerId}-${suffix}`;
          return at(tenant.tenantId, T0 + 100, event);
        });
        const outcomes = await store.commit(unit(events));
        tenantId = tenant.tenantId;
        all = events.map((e, i) => stored(e, outcomes[i]!)).reverse();
      };
      const check = async (store: EventLogUnderTest, query: Omit<EventQuery, 'limit'>, keep: (e: StoredEvent) => boolean, atLeast = 1): Promise<void> => {
        const expected = byTime(query, all.filter(keep));
        assert.ok(expected.length >= atLeast, 'the filter is tested on some events');
        assert.deepEqual(await store.listEvents(tenantId, { ...query, limit: 1000 }), { events: expected, nextCursor: null });
      };

      test('filter by action', async (store) => {
        await fill(store);
        await check(store, { action: 'PutObject' }, (e) => e.action === 'PutObject', 12);
        await check(store, { action: 'ListBuckets' }, () => false, 0);
      });

      test('filter by customerId', async (store) => {
        await fill(store);
        const c1 = all.find((e) => e.customerId?.startsWith('c1-'))!.customerId!;
        await check(store, { customerId: c1 }, (e) => e.customerId === c1, 8);
        await check(store, { customerId: `never-seen-${randomUUID()}` }, () => false, 0);
      });

      test('filter by from (inclusive) and to (exclusive)', async (store) => {
        await fill(store);
        await check(store, { from: T0 + 20 }, (e) => e.timestamp >= T0 + 20, 4);
        await check(store, { to: T0 + 3 }, (e) => e.timestamp < T0 + 3, 3);
        await check(store, { from: T0 + 5, to: T0 + 9 }, (e) => e.timestamp >= T0 + 5 && e.timestamp < T0 + 9, 4);
        await check(store, { from: T0 + 5, to: T0 + 5 }, () => false, 0);
      });

      test('filters combine', async (store) => {
        await fill(store);
        const c2 = all.find((e) => e.customerId?.startsWith('c2-'))!.customerId!;
        await check(store, { action: 'GetObject', customerId: c2, from: T0 + 2, to: T0 + 22 }, (e) => e.action === 'GetObject' && e.customerId === c2 && e.timestamp >= T0 + 2 && e.timestamp < T0 + 22, 2);
        await check(store, { customerId: c2, from: T0 + 10 }, (e) => e.customerId === c2 && e.timestamp >= T0 + 10, 2);
        await check(store, { action: 'PutObject', to: T0 + 12 }, (e) => e.action === 'PutObject' && e.timestamp < T0 + 12, 2);
      });
    });

    test('pagination walks every event once, newest first, with or without filters', async (store) => {
      const { tenantId } = await newTenant(store);
      const events = Array.from({ length: 23 }, (_, i) => at(tenantId, T0, getObject(T0 + (i % 5), { customerId: i % 2 === 0 ? 'even' : 'odd' })));
      const outcomes = [...(await store.commit(unit(events.slice(0, 10)))), ...(await store.commit(unit(events.slice(10))))];
      const newestFirst = ids(outcomes).reverse();
      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await store.listEvents(tenantId, cursor === undefined ? { limit: 5 } : { limit: 5, cursor });
        pages.push(ids(page.events));
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined);
      assert.deepEqual(pages.map((p) => p.length), [5, 5, 5, 5, 3]);
      assert.deepEqual(pages.flat(), newestFirst);
      assert.deepEqual(ids(await listAll(store, tenantId, {}, 1)), newestFirst);
      const evenIds = newestFirst.filter((_, i) => (22 - i) % 2 === 0);
      assert.deepEqual(ids(await listAll(store, tenantId, { customerId: 'even' }, 4)), evenIds);
      const inRange = newestFirst.filter((_, i) => [1, 2, 3].includes((22 - i) % 5));
      // With a time range: newest timestamp first, then newest arrival.
      const timestampOf = (id: string) => T0 + (newestFirst.length - 1 - newestFirst.indexOf(id)) % 5;
      const rangeOrder = [...inRange].sort((x, y) => timestampOf(y) - timestampOf(x) || newestFirst.indexOf(x) - newestFirst.indexOf(y));
      assert.deepEqual(ids(await listAll(store, tenantId, { from: T0 + 1, to: T0 + 4 }, 2)), rangeOrder);
    });

    test('the last page has no cursor, also when it is exactly full', async (store) => {
      const { tenantId } = await newTenant(store);
      await store.commit(unit(Array.from({ length: 6 }, () => at(tenantId, T0, getObject(T0)))));
      const first = await store.listEvents(tenantId, { limit: 3 });
      assert.equal(first.events.length, 3);
      assert.notEqual(first.nextCursor, null);
      const second = await store.listEvents(tenantId, { limit: 3, cursor: first.nextCursor! });
      assert.equal(second.events.length, 3);
      assert.equal(second.nextCursor, null);
    });

    test('a cursor keeps its place while new events arrive', async (store) => {
      const { tenantId } = await newTenant(store);
      const before = await store.commit(unit(Array.from({ length: 4 }, () => at(tenantId, T0, getObject(T0)))));
      const first = await store.listEvents(tenantId, { limit: 2 });
      await store.commit(unit([at(tenantId, T0 + 1, getObject(T0 + 1))]));
      const second = await store.listEvents(tenantId, { limit: 2, cursor: first.nextCursor! });
      assert.deepEqual(ids(second.events), [before[1]!.eventId, before[0]!.eventId]);
      assert.equal(second.nextCursor, null);
    });

    test('a cursor of a listing with another from/to is rejected when its place is outside this one', async (store) => {
      const { tenantId } = await newTenant(store);
      await store.commit(unit(Array.from({ length: 6 }, (_, i) => at(tenantId, T0, getObject(T0 + i)))));
      const first = await store.listEvents(tenantId, { limit: 2, from: T0 + 3, to: T0 + 6 });
      assert.notEqual(first.nextCursor, null);
      // Its place (T0 + 4) is past the other range's `to`: taken, it would answer that range's first page again.
      await assert.rejects(store.listEvents(tenantId, { limit: 2, from: T0, to: T0 + 3, cursor: first.nextCursor! }), InvalidCursorError);
      await assert.rejects(store.listEvents(tenantId, { limit: 2, from: T0 + 5, cursor: first.nextCursor! }), InvalidCursorError);
      const inside = await store.listEvents(tenantId, { limit: 2, from: T0 + 2, cursor: first.nextCursor! });
      assert.deepEqual(inside.events.map((e) => e.timestamp), [T0 + 3, T0 + 2], 'a range that holds its place goes on below it');
    });

    test('a cursor not made by the store is rejected with InvalidCursorError', async (store) => {
      const { tenantId } = await newTenant(store);
      for (const cursor of ['', 'not a cursor', '!!!', '\u0000', 'x'.repeat(5000)]) {
        await assert.rejects(store.listEvents(tenantId, { limit: 10, cursor }), InvalidCursorError, JSON.stringify(cursor.slice(0, 20)));
      }
    });
  });
}

function keysContract(name: string, open: () => Promise<OpenedStore>, options: ContractOptions, titles: Set<string>): void {
  portSuite<KeysUnderTest>(`keys contract: ${name}`, open, options, titles, (test) => {
    test('keys: create, find by hash, list, revoke', async (store) => {
      const tenantName = `tenant-${randomUUID()}`;
      const hash1 = randomBytes(32);
      const hash2 = randomBytes(32);
      const id1 = `key_${randomBytes(8).toString('hex')}`;
      const id2 = `key_${randomBytes(8).toString('hex')}`;
      const k1 = await store.keys.create({ id: id1, tenantName, hash: hash1, createdAt: T0 });
      assert.equal(typeof k1.tenantId, 'number');
      assert.deepEqual(k1, { id: id1, tenantId: k1.tenantId, tenantName, scope: 'all', createdAt: T0, revokedAt: null }, 'scope defaults to all');
      const k2 = await store.keys.create({ id: id2, tenantName, hash: hash2, scope: 'read', createdAt: T0 + 1 });
      assert.equal(k2.scope, 'read');
      assert.equal(k2.tenantId, k1.tenantId, 'same tenant name, same tenant');
      const other = await newTenant(store);
      assert.notEqual(other.tenantId, k1.tenantId);

      assert.deepEqual(await store.keys.findActiveByHash(hash1), k1);
      assert.deepEqual(await store.keys.findActiveByHash(Buffer.from(hash2)), k2);
      assert.equal(await store.keys.findActiveByHash(randomBytes(32)), undefined);
      const listed = await store.keys.list();
      assert.deepEqual(listed.find((k) => k.id === id1), k1);
      assert.deepEqual(listed.find((k) => k.id === id2), k2);

      assert.equal(await store.keys.revoke(id1, T0 + 5), true);
      assert.equal(await store.keys.revoke(id1, T0 + 6), false, 'already revoked');
      assert.equal(await store.keys.revoke(`key_${randomBytes(8).toString('hex')}`, T0), false, 'no such key');
      assert.equal(await store.keys.findActiveByHash(hash1), undefined);
      assert.deepEqual(await store.keys.findActiveByHash(hash2), k2);
      assert.deepEqual((await store.keys.list()).find((k) => k.id === id1), { ...k1, revokedAt: T0 + 5 });
    });

    test('keys: a duplicate id or hash is refused as a caller error, not as unavailability', async (store) => {
      const key = await newTenant(store);
      const hash = randomBytes(32);
      const sameId = store.keys.create({ id: key.id, tenantName: key.tenantName, hash, createdAt: T0 });
      await assert.rejects(sameId, (err) => !(err instanceof StoreUnavailableError));
      const withHash = await store.keys.create({ id: `key_${randomBytes(8).toString('hex')}`, tenantName: key.tenantName, hash, createdAt: T0 });
      const sameHash = store.keys.create({ id: `key_${randomBytes(8).toString('hex')}`, tenantName: key.tenantName, hash, createdAt: T0 });
      await assert.rejects(sameHash, (err) => !(err instanceof StoreUnavailableError));
      assert.deepEqual(await store.keys.findActiveByHash(hash), withHash);
    });

    test('keys: createIfNone creates nothing when a key exists', async (store) => {
      await newTenant(store);
      const hash = randomBytes(32);
      const id = `key_${randomBytes(8).toString('hex')}`;
      assert.equal(await store.keys.createIfNone({ id, tenantName: `tenant-${randomUUID()}`, hash, createdAt: T0 }), undefined);
      assert.equal(await store.keys.findActiveByHash(hash), undefined);
      assert.equal((await store.keys.list()).find((k) => k.id === id), undefined);
    });
  });
}

function quarantineContract(name: string, open: () => Promise<OpenedStore>, options: ContractOptions, titles: Set<string>): void {
  portSuite<QuarantineUnderTest>(`quarantine contract: ${name}`, open, options, titles, (test) => {
    const input = (tenantId: number, receivedAt: number, extra: Partial<QuarantineInput> = {}): QuarantineInput => ({
      tenantId,
      receivedAt,
      code: 'BM_ERR_EVENT_INVALID',
      errors: fieldErrors,
      source: 'POST /s3/batch',
      body: Buffer.from(JSON.stringify({ action: 'GetObject', bytes: '12' })),
      truncated: false,
      ...extra,
    });
    const entry = (q: QuarantineInput, id: number, tenantName: string, replayedAt: number | null = null): QuarantineEntry => ({ ...q, id, tenantName, replayedAt });

    test('quarantine entries commit with events, and come back by list and get', async (store) => {
      const a = await newTenant(store);
      const b = await newTenant(store);
      const qa1 = input(a.tenantId, T0, { index: 0 });
      const qa2 = input(a.tenantId, T0 + 1, { body: Buffer.from([0x00, 0xff, 0x7b, 0x80, 0x0a]), truncated: true, source: 'POST /s3', code: 'BM_ERR_BODY_INVALID_JSON', errors: [] });
      const qb = input(b.tenantId, T0 + 2, { index: 999 });
      const outcomes = await store.commit(unit([at(a.tenantId, T0, getObject(T0))], [qa1, qa2, qb]));
      assert.equal(outcomes.length, 1);
      assert.equal((await store.listEvents(a.tenantId, { limit: 10 })).events.length, 1, 'the unit stored its event too');

      const listedA = await store.quarantine.list({ tenantId: a.tenantId, limit: 100, includeReplayed: true });
      assert.equal(listedA.length, 2);
      const [id1, id2] = [listedA[0]!.id, listedA[1]!.id];
      assert.ok(id1 < id2, 'ascending ids');
      assert.deepEqual(listedA, [entry(qa1, id1, a.tenantName), entry(qa2, id2, a.tenantName)]);
      assert.equal('index' in listedA[1]!, false, 'no index when none was given');
      const listedB = await store.quarantine.list({ tenantId: b.tenantId, limit: 100, includeReplayed: false });
      assert.deepEqual(listedB, [entry(qb, listedB[0]!.id, b.tenantName)]);

      assert.deepEqual(await store.quarantine.get(id2), entry(qa2, id2, a.tenantName));
      assert.equal(await store.quarantine.get(2_000_000_000), undefined);
      assert.deepEqual(await store.quarantine.list({ tenantId: a.tenantId, afterId: id1, limit: 100, includeReplayed: true }), [entry(qa2, id2, a.tenantName)]);
      assert.deepEqual(await store.quarantine.list({ tenantId: a.tenantId, limit: 1, includeReplayed: true }), [entry(qa1, id1, a.tenantName)]);

      // Without a tenant: every tenant's entries, ascending.
      const everyone = await store.quarantine.list({ afterId: id1 - 1, limit: 100_000, includeReplayed: true });
      const mine = everyone.filter((e) => e.tenantId === a.tenantId || e.tenantId === b.tenantId);
      assert.deepEqual(mine.map((e) => e.id), [id1, id2, listedB[0]!.id]);
      assert.deepEqual([...everyone].sort((x, y) => x.id - y.id), everyone);
    });

    test('replayed marks are set by the unit that replays', async (store) => {
      const a = await newTenant(store);
      await store.commit(unit([], [input(a.tenantId, T0), input(a.tenantId, T0 + 1)]));
      const [q1, q2] = await store.quarantine.list({ tenantId: a.tenantId, limit: 10, includeReplayed: false });
      const outcomes = await store.commit(unit([at(a.tenantId, T0 + 50, getObject(T0))], [], { ids: [q1!.id], at: T0 + 50 }));
      assert.equal(outcomes[0]!.duplicate, false);
      assert.equal((await store.listEvents(a.tenantId, { limit: 10 })).events.length, 1);
      assert.equal((await store.quarantine.get(q1!.id))?.replayedAt, T0 + 50);
      assert.equal((await store.quarantine.get(q2!.id))?.replayedAt, null);
      assert.deepEqual((await store.quarantine.list({ tenantId: a.tenantId, limit: 10, includeReplayed: false })).map((e) => e.id), [q2!.id]);
      const withReplayed = await store.quarantine.list({ tenantId: a.tenantId, limit: 10, includeReplayed: true });
      assert.deepEqual(withReplayed.map((e) => [e.id, e.replayedAt]), [[q1!.id, T0 + 50], [q2!.id, null]]);
    });

    test('newestFirst lists in descending id order; countSince counts one tenant from a time on', async (store) => {
      const a = await newTenant(store);
      const b = await newTenant(store);
      // A period no other test writes into, later than any earlier run's (the count assumes that
      // ids grow with receipt time, as the server's clock makes them).
      const since = 3_000_000_000 + (Date.now() - 1_700_000_000_000);
      await store.commit(unit([], [input(a.tenantId, since - 10)]));
      await store.commit(unit([], [input(a.tenantId, since), input(b.tenantId, since), input(a.tenantId, since + 1)]));
      const newest = await store.quarantine.list({ tenantId: a.tenantId, limit: 10, includeReplayed: true, newestFirst: true });
      assert.deepEqual(newest.map((e) => e.receivedAt), [since + 1, since, since - 10]);
      assert.deepEqual((await store.quarantine.list({ tenantId: a.tenantId, limit: 2, includeReplayed: true, newestFirst: true })).map((e) => e.receivedAt), [since + 1, since]);
      assert.equal(await store.quarantine.countSince(a.tenantId, since), 2);
      assert.equal(await store.quarantine.countSince(b.tenantId, since), 1);
      assert.equal(await store.quarantine.countSince(a.tenantId, since + 2), 0);
    });

    test('beforeId pages a newest-first list of one tenant, without another tenant\'s entries between', async (store) => {
      const a = await newTenant(store);
      const b = await newTenant(store);
      await store.commit(unit([], [input(a.tenantId, T0 + 1), input(b.tenantId, T0 + 2), input(a.tenantId, T0 + 3), input(b.tenantId, T0 + 4), input(a.tenantId, T0 + 5)]));
      const query = { tenantId: a.tenantId, limit: 2, includeReplayed: true, newestFirst: true };
      const first = await store.quarantine.list(query);
      assert.deepEqual(first.map((e) => e.receivedAt), [T0 + 5, T0 + 3]);
      const second = await store.quarantine.list({ ...query, beforeId: first[1]!.id });
      assert.deepEqual(second.map((e) => [e.receivedAt, e.tenantId]), [[T0 + 1, a.tenantId]]);
      assert.deepEqual(await store.quarantine.list({ ...query, beforeId: second[0]!.id }), []);
    });

    test('purgeBefore deletes entries received before the time, and counts them', async (store) => {
      const a = await newTenant(store);
      // Far in the past, so that no other test's entries fall between; a run that crashed before
      // purging may have left older ones, hence "at least".
      const base = 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
      await store.commit(unit([], [input(a.tenantId, base), input(a.tenantId, base + 1), input(a.tenantId, base + 2)]));
      const [q1, q2, q3] = await store.quarantine.list({ tenantId: a.tenantId, limit: 10, includeReplayed: true });
      const removed = await store.quarantine.purgeBefore(base + 2);
      assert.ok(removed >= 2, `removed ${removed}`);
      assert.equal(await store.quarantine.get(q1!.id), undefined);
      assert.equal(await store.quarantine.get(q2!.id), undefined);
      assert.equal((await store.quarantine.get(q3!.id))?.receivedAt, base + 2);
      assert.equal(await store.quarantine.purgeBefore(base + 2), 0);
    });
  });
}

function healthContract(name: string, open: () => Promise<OpenedStore>, options: ContractOptions, titles: Set<string>): void {
  portSuite<HealthUnderTest>(`health contract: ${name}`, open, options, titles, (test) => {
    test('checkWritable resolves on a working store', async (store) => {
      await store.checkWritable();
    });

    test('after close, commit rejects with StoreUnavailableError', async () => {
      const own = await open();
      try {
        const { tenantId } = await newTenant(own.store);
        await own.store.close();
        await assert.rejects(own.store.commit(unit([at(tenantId, T0, getObject(T0))])), StoreUnavailableError);
      } finally {
        await own.cleanup();
      }
    });
  });
}

function jobsContract(name: string, open: () => Promise<OpenedStore>, options: ContractOptions, titles: Set<string>): void {
  portSuite<JobsUnderTest>(`jobs contract: ${name}`, open, options, titles, (test) => {
    test('an open store claims the background jobs when no other process holds them, and keeps them', async (store) => {
      assert.equal(await store.claimJobs(), true);
      assert.equal(await store.claimJobs(), true);
    });

    test('a second store on the same database does not get the jobs while the first holds them, and does once it closes', async (first) => {
      assert.equal(await first.claimJobs(), true);
      const second = await open();
      try {
        const other = second.store as JobsUnderTest;
        assert.equal(await other.claimJobs(), false);
        assert.equal(await other.claimJobs(), false, 'still not, on asking again');
        await first.close();
        assert.equal(await other.claimJobs(), true, 'taken over once the owner is gone');
      } finally {
        await second.cleanup();
      }
    });

    test('a closed store claims nothing', async () => {
      const own = await open();
      await own.store.close();
      try {
        assert.equal(await own.store.claimJobs(), false);
      } finally {
        await own.cleanup();
      }
    });
  });
}

/**
 * UsageStore.version: the tenant's events before a UTC day, and its rebuilds, which each rebuild moves
 * (of the tenant's rollups or inventory, or of every tenant's) and nothing else does. The every-tenant
 * rebuild here spans one hour: the database may hold other suites' tenants.
 */
function versionContract(name: string, open: () => Promise<OpenedStore>, options: ContractOptions, titles: Set<string>): void {
  portSuite<VersionUnderTest>(`usage version contract: ${name}`, open, options, titles, (test) => {
    const DAY = 86400;
    const day = T0 / DAY;
    const version = (store: VersionUnderTest, tenantId: number, toDay = day + 1) => store.usage.version(tenantId, toDay);

    test("a tenant's version counts its events before the day, and nothing else moves it", async (store) => {
      const { tenantId } = await newTenant(store);
      const { tenantId: other } = await newTenant(store);
      // Rebuilds of every tenant before it was made (an earlier suite's, on the same database) count for it too.
      const { rebuilds } = await version(store, tenantId);
      assert.deepEqual(await version(store, tenantId), { events: 0n, rebuilds });
      await store.commit(unit([at(tenantId, T0 + 10, getObject(T0 + 5)), at(tenantId, T0 + 10, getObject(T0 + 6)), at(tenantId, T0 + DAY + 10, getObject(T0 + DAY))]));
      await store.commit(unit([at(other, T0 + 10, getObject(T0 + 5))]));
      assert.deepEqual(await version(store, tenantId), { events: 2n, rebuilds }, 'the event of the next day is not before it');
      assert.deepEqual(await version(store, tenantId, day + 2), { events: 3n, rebuilds });
      assert.deepEqual(await version(store, tenantId, day), { events: 0n, rebuilds });
    });

    test("each rebuild of the tenant's rollups or inventory moves its rebuilds in the version, and only its own", async (store) => {
      const { tenantId } = await newTenant(store);
      const { tenantId: other } = await newTenant(store);
      await store.commit(unit([at(tenantId, T0 + 10, getObject(T0 + 5))]));
      const before = await version(store, tenantId);
      const others = await version(store, other);
      await store.usage.rebuild(tenantId, T0 / 3600, T0 / 3600 + 1);
      assert.deepEqual(await version(store, tenantId), { events: before.events, rebuilds: before.rebuilds + 1n }, 'a usage rebuild, the events unchanged');
      // A range that holds none of the tenant's events is a rebuild all the same: the version does not look at ranges.
      await store.usage.rebuild(tenantId, T0 / 3600 + 100, T0 / 3600 + 101);
      await store.inventory.rebuild(tenantId);
      assert.deepEqual(await version(store, tenantId), { events: before.events, rebuilds: before.rebuilds + 3n }, 'and an inventory rebuild');
      assert.deepEqual(await version(store, other), others, "another tenant's rebuilds do not move this one's");
    });

    test("a rebuild of every tenant's rollups or inventory moves every tenant's rebuilds", async (store) => {
      const tenants = [(await newTenant(store)).tenantId, (await newTenant(store)).tenantId];
      const before = await Promise.all(tenants.map((t) => version(store, t)));
      await store.usage.rebuild(null, T0 / 3600, T0 / 3600 + 1);
      assert.deepEqual(await Promise.all(tenants.map((t) => version(store, t))), before.map((v) => ({ events: v.events, rebuilds: v.rebuilds + 1n })));
      // It replays every tenant's events on this database, the event log suites' of MAX_EVENT_BYTES among them.
      await store.inventory.rebuild(null);
      assert.deepEqual(await Promise.all(tenants.map((t) => version(store, t))), before.map((v) => ({ events: v.events, rebuilds: v.rebuilds + 2n })));
      // A tenant made after them has the rebuilds of every tenant counted too: they are one count, added to each tenant's.
      const { tenantId: later } = await newTenant(store);
      assert.ok((await version(store, later)).rebuilds >= 1n);
    });
  });
}

type UsageUnderTest = EventLog & { keys: KeyStore; usage: UsageStore };

/** A usage answer of the store as the reference model keys it (usage/reference.ts): label|values → measures, rows of all zeros left out. */
async function usageAnswer(store: UsageUnderTest, tenantId: number, bounds: number[], granularity: 'hour' | 'day' | 'none', groupBy: Dim[]): Promise<Map<string, bigint[]>> {
  const rows = columnRows(await store.usage.query(tenantId, { terms: planUsage(groupBy, bounds), groupBy, filters: {} }));
  const out = new Map<string, bigint[]>();
  for (const row of rows) {
    if (row.measures.every((m) => m === 0n)) continue;
    out.set(`${windowLabel(granularity, 'UTC', bounds[row.window]! * 3600)}|${JSON.stringify(row.values)}`, row.measures);
  }
  return out;
}

/** UsageStore: what one tenant sends cannot stop the fold or the reads of another. */
function usageContract(name: string, open: () => Promise<OpenedStore>, options: ContractOptions, titles: Set<string>): void {
  portSuite<UsageUnderTest>(`usage contract: ${name}`, open, options, titles, (test) => {
    test("a tenant's byte sums past 2^63 stop no other tenant's fold or reads, and its own read exactly", async (store) => {
      // 2^19 GetObjects of the largest size in one hour with the same dimensions (one key can send
      // them): their bytes in that hour's rollup rows pass 2^63, which both stores refused, stopping
      // the fold of every tenant (SQLite: "integer overflow"; PostgreSQL: "bigint out of range").
      const attacker = (await newTenant(store)).tenantId;
      const other = (await newTenant(store)).tenantId;
      const H0 = T0 / 3600;
      const big = (i: number) => ({
        action: i % 1000 === 1 ? 'PutObject' : 'GetObject',
        timestamp: T0 + (i % 3600),
        provider: 'aws',
        bucket: 'b',
        objectKey: 'k',
        customerId: 'c1',
        bytes: i % 7 === 0 ? MAX_EVENT_BYTES - 12345 : MAX_EVENT_BYTES,
        ...(i % 1000 === 1 ? {} : { isBillableEgress: i % 5 !== 0 }),
      });
      const count = 2 ** 19 + 2048;
      const CHUNK = 16_384;
      for (let from = 0; from < count; from += CHUNK) {
        const events = Array.from({ length: Math.min(CHUNK, count - from) }, (_, k) => at(attacker, T0 + 3600, big(from + k) as unknown as NormalizedEvent));
        await store.commit(unit(events));
      }
      const small = [
        { action: 'GetObject', timestamp: T0 + 5, provider: 'aws', bucket: 'b', objectKey: 'k', customerId: 'c1', featureId: 'f1', bytes: 123 },
        { action: 'PutObject', timestamp: T0 + 3605, provider: 'wasabi', bucket: 'b2', objectKey: 'k', customerId: 'c2', clientId: 'd1', bytes: 456 },
        { action: 'GetObject', timestamp: T0 + 86400 + 7, provider: 'aws', bucket: 'b', objectKey: 'k', clientType: 'web', bytes: 789, isBillableEgress: false },
        { action: 'HeadObject', timestamp: T0 + 86400 + 9, provider: 'aws', bucket: 'b', objectKey: 'k' },
      ];
      await store.commit(unit(small.map((e) => at(other, T0 + 2 * 86400, e as unknown as NormalizedEvent))));
      // As the background fold would (a read folds within a budget only: 2^19 events may take longer on a busy machine).
      await store.usage.catchUp();
      const wire = (e: Record<string, unknown>) => ({ event: { ...e, timestamp: new Date((e.timestamp as number) * 1000).toISOString() }, valid: true });
      const refOther = countedEvents(small.map(wire));
      const groupBys: Dim[][] = [[], ['customerId'], ['provider', 'customerId', 'featureId', 'clientType', 'action'], ['customerId', 'featureId', 'action'], ['customerId', 'clientId'], ['bucket'], ['provider', 'bucket', 'customerId', 'featureId', 'clientType', 'clientId', 'action']];
      const D0 = Math.floor(H0 / 24) * 24;
      const windows: { bounds: number[]; granularity: 'hour' | 'day' | 'none' }[] = [
        { bounds: Array.from({ length: 49 }, (_, h) => H0 - 1 + h), granularity: 'hour' },
        { bounds: [D0, D0 + 24, D0 + 48, D0 + 72], granularity: 'day' },
        { bounds: [D0 - 24 * 200, D0 + 24 * 200], granularity: 'none' },
      ];
      const query = (bounds: number[], granularity: string, groupBy: Dim[]): RefQuery => ({ from: bounds[0]! * 3600, to: bounds.at(-1)! * 3600, granularity, timeZone: 'UTC', groupBy, filters: {} });
      for (const { bounds, granularity } of windows) {
        for (const groupBy of groupBys) {
          assert.deepEqual(await usageAnswer(store, other, bounds, granularity, groupBy), reference(refOther, query(bounds, granularity, groupBy)), `the other tenant: ${granularity} by ${groupBy.join(',')}`);
        }
      }
      assert.equal((await store.usage.lag()).pendingEvents, 0, 'the fold kept up');
      // The attacker's answers, exact: by the hour and over the long window (day shapes), from every shape.
      // Summed per hour and dimensions first (the windows are whole hours): the same answers, 14 queries without 2^19 events each.
      const perHour = new Map<string, RefEvent>();
      for (const e of countedEvents(Array.from({ length: count }, (_, i) => wire(big(i))))) {
        const hour = Math.floor(e.timestamp / 3600) * 3600;
        const key = `${hour}|${JSON.stringify(e.dims)}`;
        const got = perHour.get(key);
        if (got === undefined) perHour.set(key, { ...e, timestamp: hour, measures: [...e.measures] });
        else got.measures = got.measures.map((m, i) => m + e.measures[i]!);
      }
      const refAttacker = [...perHour.values()];
      for (const { bounds, granularity } of windows.filter((w) => w.granularity !== 'day')) {
        for (const groupBy of groupBys) {
          const expected = reference(refAttacker, query(bounds, granularity, groupBy));
          assert.ok([...expected.values()].some((m) => m[1]! > 2n ** 63n), 'past 2^63');
          assert.deepEqual(await usageAnswer(store, attacker, bounds, granularity, groupBy), expected, `the attacker: ${granularity} by ${groupBy.join(',')}`);
        }
      }
      // A rebuild sums all of them at once (not a fold's chunk): the same answers.
      await store.usage.rebuild(attacker, H0 - 1, H0 + 1);
      for (const groupBy of groupBys) {
        const { bounds, granularity } = windows[0]!;
        assert.deepEqual(await usageAnswer(store, attacker, bounds, granularity, groupBy), reference(refAttacker, query(bounds, granularity, groupBy)), `after a rebuild: by ${groupBy.join(',')}`);
      }
      const day = Math.floor(T0 / 86400);
      for (const check of await store.usage.reconcile(attacker, day - 1, day + 2)) {
        for (const [shape, sums] of Object.entries(check.rollups)) assert.deepEqual(sums, check.events, `reconcile: ${shape} on day ${check.day}`);
      }
    });
  });
}
