/**
 * Answers kept for asking again and for their next pages (UsageService, issue 13), on both real
 * stores: every page from a kept answer is the page computing afresh gives, and a page from it reads
 * no answer from the store (only the tenant's event count); a first page asked again, of one page or
 * several, is served from it; an event the answer depends on (late in the range, or before it) has
 * it computed again, on every node (each keeps its own; the count is read from the store), and so
 * does a rebuild of the rollups or the inventory by another process (`usage rebuild`); an answer
 * evicted, expired, too heavy, kept by another process, or computed for a client that left is
 * computed again; another tenant never gets it (nor its cursor); one tenant cannot push another's
 * answers out.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { KeptAnswers } from '../../src/query/kept.js';
import type { Store, UsageStore } from '../../src/store/types.js';
import type { UsageRequest } from '../../src/usage/params.js';
import { MAX_ROWS } from '../../src/usage/params.js';
import type { UsagePage } from '../../src/usage/service.js';
import { pageRows, UsageService } from '../../src/usage/service.js';
import { newTenant } from '../store/contract.js';
import { damageRollups, openSameData } from '../support/same-data.js';
import { dropFreshStores, openedBackends } from '../support/backends.js';
import type { OpenedStore } from '../support/backends.js';

const FROM = Date.UTC(2026, 2, 1) / 1000;
const DAY = 86400;
const TO = FROM + 3 * DAY;

const BACKENDS = openedBackends('usage-kept', 4);

/** A seeded generator: the same events every run. */
function rng(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s % n;
  };
}

function events(seed: number, count: number): NormalizedEvent[] {
  const next = rng(seed);
  const out: NormalizedEvent[] = [];
  for (let i = 0; i < count; i++) {
    // Some before `from`: stored bytes opening the range.
    const timestamp = FROM - DAY + next(4 * DAY);
    const fields = { provider: 'aws', bucket: `b${next(2)}`, customerId: `c${next(6)}`, featureId: next(4) === 0 ? undefined : `f${next(3)}`, clientId: `d${next(5)}` };
    const kind = next(3);
    if (kind === 0) out.push({ action: 'PutObject', timestamp, objectKey: `k${next(20)}`, bytes: 1 + next(1_000_000), ...fields } as NormalizedEvent);
    else if (kind === 1) out.push({ action: 'GetObject', timestamp, objectKey: `k${next(20)}`, bytes: 1 + next(10_000), isBillableEgress: next(2) === 0, ...fields } as NormalizedEvent);
    else out.push({ action: 'HeadBucket', timestamp, ...fields } as NormalizedEvent);
  }
  return out;
}

const QUERIES: Omit<UsageRequest, 'limit' | 'format'>[] = [
  { from: FROM, to: TO, granularity: 'hour', timeZone: 'UTC', groupBy: ['customerId', 'featureId'], filters: {}, storage: false },
  { from: FROM, to: TO, granularity: 'day', timeZone: 'Europe/Berlin', groupBy: ['clientId', 'action', 'bucket'], filters: { customerId: ['c1', 'c2'] }, storage: false },
  { from: FROM, to: TO, granularity: 'hour', timeZone: 'UTC', groupBy: ['featureId'], filters: { featureId: ['', 'f1'] }, storage: false },
  { from: FROM, to: TO, granularity: 'hour', timeZone: 'UTC', groupBy: ['customerId', 'bucket'], filters: {}, storage: true },
];

/** Reads of the store, by kind: the tenant's version (its event count and rebuilds), and answers. */
interface Reads {
  versions: number;
  answers: number;
}

/** The real store, its reads counted (not replaced). */
function counted(store: Store, reads: Reads): { usage: UsageStore; inventory: Store['inventory'] } {
  const usage: UsageStore = Object.create(store.usage);
  usage.query = (tenantId, query, signal) => {
    reads.answers++;
    return store.usage.query(tenantId, query, signal);
  };
  usage.version = (tenantId, toDay, signal) => {
    reads.versions++;
    return store.usage.version(tenantId, toDay, signal);
  };
  const inventory: Store['inventory'] = Object.create(store.inventory);
  inventory.storage = (tenantId, query, signal) => {
    reads.answers++;
    return store.inventory.storage(tenantId, query, signal);
  };
  return { usage, inventory };
}

const rowsOf = (page: UsagePage) => pageRows(page).map((r) => JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));

for (const backend of BACKENDS) {
  describe(`usage: answers kept for asking again and for their next pages (${backend.name})`, { skip: backend.skip }, () => {
    let opened: OpenedStore;
    let tenantA: number;
    let tenantB: number;
    const commit = (tenantId: number, list: NormalizedEvent[]) => opened.store.commit({ events: list.map((event) => ({ tenantId, receivedAt: TO + DAY, event })), quarantine: [] });
    const service = (reads: Reads, kept: { rows?: number; now?: () => number } = {}) => {
      const { usage, inventory } = counted(opened.store, reads);
      return new UsageService(usage, inventory, kept);
    };
    /** The whole answer in one page, from a service that keeps nothing. */
    const whole = async (tenantId: number, q: (typeof QUERIES)[number]) => rowsOf(await new UsageService(opened.store.usage, opened.store.inventory, { rows: 0 }).query(tenantId, { ...q, format: 'json', limit: MAX_ROWS }));

    before(async () => {
      opened = await backend.open();
      ({ tenantId: tenantA } = await newTenant(opened.store));
      ({ tenantId: tenantB } = await newTenant(opened.store));
      await commit(tenantA, events(1, 1500));
      await commit(tenantB, events(2, 300));
    });
    after(async () => {
      await opened.close();
    });

    it('pages from a kept answer are the pages computed afresh, and read no answer from the store', async () => {
      for (const q of QUERIES) {
        const expected = await whole(tenantA, q);
        assert.ok(expected.length > 50, `${JSON.stringify(q.groupBy)}: an answer of many rows (${expected.length})`);
        for (const limit of [1, 7, 50]) {
          const reads = { versions: 0, answers: 0 };
          const kept = service(reads);
          const recomputing = service({ versions: 0, answers: 0 }, { rows: 0 });
          const got: string[] = [];
          let cursor: string | undefined;
          let pages = 0;
          do {
            const request: UsageRequest = { ...q, format: 'json', limit, ...(cursor === undefined ? {} : { cursor }) };
            const page = await kept.query(tenantA, request);
            assert.deepEqual(rowsOf(page), rowsOf(await recomputing.query(tenantA, request)), `page ${pages + 1} as computed afresh`);
            got.push(...rowsOf(page));
            cursor = page.nextCursor ?? undefined;
            pages++;
            // Stop early at limit 1: hundreds of pages prove no more than a few dozen.
          } while (cursor !== undefined && pages < 40);
          if (cursor === undefined) assert.deepEqual(got, expected, `limit ${limit}: the pages make the whole answer`);
          else assert.deepEqual(got, expected.slice(0, got.length), `limit ${limit}: the pages begin the whole answer`);
          assert.equal(reads.answers, q.storage ? 2 : 1, `limit ${limit}: only the first page read an answer`);
          assert.equal(kept.pageCounts().next.kept, pages - 1);
          // The first page reads the count before its answer and after; each next page once.
          assert.equal(reads.versions, 2 + (pages - 1));
        }
      }
    });

    it('an answer not kept here (another process, a restart, evicted, expired) is computed again', async () => {
      const q = { ...QUERIES[0]!, format: 'json' as const, limit: 10 };
      const first = await service({ versions: 0, answers: 0 }).query(tenantA, q);
      const next = { ...q, cursor: first.nextCursor! };
      const expected = rowsOf(await service({ versions: 0, answers: 0 }, { rows: 0 }).query(tenantA, next));

      const elsewhere = { versions: 0, answers: 0 };
      assert.deepEqual(rowsOf(await service(elsewhere).query(tenantA, next)), expected, 'another process');
      assert.equal(elsewhere.answers, 1);

      const small = { versions: 0, answers: 0 };
      const tiny = service(small, { rows: 10 });
      await tiny.query(tenantA, q);
      assert.deepEqual(rowsOf(await tiny.query(tenantA, next)), expected, 'too big to keep');
      assert.equal(small.answers, 2);

      let now = 0;
      const timed = { versions: 0, answers: 0 };
      const aging = service(timed, { now: () => now });
      await aging.query(tenantA, q);
      now += 4 * 60_000;
      assert.deepEqual(rowsOf(await aging.query(tenantA, next)), expected, 'kept');
      assert.equal(timed.answers, 1);
      now += 6 * 60_000;
      assert.deepEqual(rowsOf(await aging.query(tenantA, next)), expected, 'expired');
      assert.equal(timed.answers, 2);
    });

    it('a first page asked again is served from the kept answer, for answers of one page and of several, after the last page too', async () => {
      for (const q of QUERIES) {
        for (const limit of [MAX_ROWS, 50]) {
          const request: UsageRequest = { ...q, format: 'json', limit };
          const reads = { versions: 0, answers: 0 };
          const kept = service(reads);
          const computed = rowsOf(await kept.query(tenantA, request));
          const answers = reads.answers;
          assert.equal(answers, q.storage ? 2 : 1);
          // Read to its last page, then asked again from the start, twice.
          let cursor = (await kept.query(tenantA, request)).nextCursor;
          while (cursor !== null) cursor = (await kept.query(tenantA, { ...request, cursor })).nextCursor;
          const again = rowsOf(await kept.query(tenantA, request));
          assert.deepEqual(again, computed);
          assert.deepEqual(again, rowsOf(await service({ versions: 0, answers: 0 }, { rows: 0 }).query(tenantA, request)), 'as computed afresh');
          assert.equal(reads.answers, answers, `limit ${limit}: no answer read again`);
          assert.deepEqual(kept.pageCounts().first, { kept: 2, computed: 1 });
          // CSV pages share the answer: the format is not part of what is kept.
          await kept.query(tenantA, { ...request, format: 'csv' });
          assert.equal(reads.answers, answers, `limit ${limit}: CSV from the kept answer`);
        }
      }
    });

    it('an event the answer depends on, late in the range or before it, has the first page computed again; one after its last day does not', async () => {
      const q: UsageRequest = { ...QUERIES[3]!, format: 'json', limit: MAX_ROWS };
      const reads = { versions: 0, answers: 0 };
      const kept = service(reads);
      await kept.query(tenantA, q);
      await kept.query(tenantA, q);
      assert.equal(reads.answers, 2, 'asked again: kept (storage reads two answers)');
      const [row] = pageRows(await kept.query(tenantA, q));
      const [customerId, bucket] = row!.values;
      // A late event in the first row's hour: that row counts it.
      await commit(tenantA, [{ action: 'HeadBucket', timestamp: row!.start + 60, provider: 'aws', bucket: bucket ?? 'b0', ...(customerId === null ? {} : { customerId }) } as NormalizedEvent]);
      const late = await kept.query(tenantA, q);
      assert.equal(reads.answers, 4, 'computed again');
      assert.equal(pageRows(late)[0]!.measures[0], row!.measures[0]! + 1n, 'the late event is counted');
      assert.deepEqual(rowsOf(late), rowsOf(await service({ versions: 0, answers: 0 }, { rows: 0 }).query(tenantA, q)));
      await kept.query(tenantA, q);
      assert.equal(reads.answers, 4, 'and kept again');
      // Before `from`: stored bytes open the range with it (an object put the day before).
      await commit(tenantA, [{ action: 'PutObject', timestamp: FROM - DAY + 5, provider: 'aws', bucket: 'b0', objectKey: 'before', bytes: 1000, customerId: 'c0' } as NormalizedEvent]);
      const opened = await kept.query(tenantA, q);
      assert.equal(reads.answers, 6, 'computed again');
      assert.deepEqual(rowsOf(opened), rowsOf(await service({ versions: 0, answers: 0 }, { rows: 0 }).query(tenantA, q)));
      assert.notDeepEqual(rowsOf(opened), rowsOf(late), 'the earlier object is stored through the range');
      await commit(tenantA, [{ action: 'PutObject', timestamp: TO + 3 * DAY, provider: 'aws', bucket: 'b0', objectKey: 'after', bytes: 1000, customerId: 'c0' } as NormalizedEvent]);
      await kept.query(tenantA, q);
      assert.equal(reads.answers, 6, 'kept across an event after the last day');
      assert.deepEqual(kept.pageCounts().first, { kept: 4, computed: 3 });
    });

    it('two nodes on one store, each keeping its own answers, never disagree: a new event has both compute again', async () => {
      const q: UsageRequest = { ...QUERIES[2]!, format: 'json', limit: MAX_ROWS };
      const reads = [
        { versions: 0, answers: 0 },
        { versions: 0, answers: 0 },
      ];
      const nodes = reads.map((r) => service(r));
      for (let i = 0; i < 2; i++) for (const node of nodes) await node.query(tenantA, q);
      assert.deepEqual(reads.map((r) => r.answers), [1, 1], 'each computed once, then from its own kept answer');
      await commit(tenantA, [{ action: 'HeadBucket', timestamp: FROM + 3600, provider: 'aws', bucket: 'b0', featureId: 'f1' } as NormalizedEvent]);
      const [one, two] = await Promise.all(nodes.map(async (node) => rowsOf(await node.query(tenantA, q))));
      assert.deepEqual(reads.map((r) => r.answers), [2, 2], 'the count read from the store is new to both');
      assert.deepEqual(one, two);
      assert.deepEqual(one, rowsOf(await service({ versions: 0, answers: 0 }, { rows: 0 }).query(tenantA, q)));
    });

    it("another tenant never gets a tenant's kept answer", async () => {
      const q: UsageRequest = { ...QUERIES[0]!, format: 'json', limit: MAX_ROWS };
      const reads = { versions: 0, answers: 0 };
      const shared = service(reads);
      const mine = rowsOf(await shared.query(tenantA, q));
      const theirs = rowsOf(await shared.query(tenantB, q));
      assert.equal(reads.answers, 2, "tenant B's answer was computed");
      assert.deepEqual(theirs, rowsOf(await service({ versions: 0, answers: 0 }, { rows: 0 }).query(tenantB, q)));
      assert.notDeepEqual(theirs, mine);
      assert.deepEqual(rowsOf(await shared.query(tenantA, q)), mine);
      assert.deepEqual(rowsOf(await shared.query(tenantB, q)), theirs);
      assert.equal(reads.answers, 2, 'each kept its own');
    });

    it('an answer counts its windows and itself, not only its rows, against the kept rows', async () => {
      // No row (no such customer), 72 hourly windows: 73 boundaries, plus 64 for the answer, 137.
      const q: UsageRequest = { ...QUERIES[0]!, groupBy: [], filters: { customerId: ['nobody'] }, format: 'json', limit: MAX_ROWS };
      for (const [rows, answers] of [
        [2 * 136, 2],
        [2 * 137, 1],
      ] as const) {
        const reads = { versions: 0, answers: 0 };
        const kept = service(reads, { rows });
        assert.deepEqual(rowsOf(await kept.query(tenantA, q)), []);
        await kept.query(tenantA, q);
        assert.equal(reads.answers, answers, `a tenant's share of ${rows / 2}`);
        assert.equal(kept.pageCounts().keptRows, answers === 1 ? 137 : 0);
      }
    });

    it('an answer computed for a client that left is not kept', async () => {
      const q: UsageRequest = { ...QUERIES[1]!, format: 'json', limit: MAX_ROWS };
      const reads = { versions: 0, answers: 0 };
      const left = new AbortController();
      const { usage, inventory } = counted(opened.store, reads);
      // The client leaves once the answer is read, before the count is read again.
      const answer = usage.query;
      usage.query = async (tenantId, query, signal) => {
        const before = reads.answers;
        const result = await answer(tenantId, query, signal);
        if (reads.answers > before) left.abort();
        return result;
      };
      const kept = new UsageService(usage, inventory);
      await assert.rejects(kept.query(tenantA, q, left.signal));
      assert.equal(reads.answers, 1);
      await kept.query(tenantA, q);
      assert.equal(reads.answers, 2, 'computed again');
      await kept.query(tenantA, q);
      assert.equal(reads.answers, 2, 'then kept');
    });

    it('an answer kept from damaged rollups is computed again after `usage rebuild` in another process: of the tenant, and of every tenant', async () => {
      // Hourly by customer: from usage_customer_hour, which damageRollups damages (QUERIES[0] reads the events).
      const asked = { ...QUERIES[0]!, groupBy: ['customerId' as const] };
      const q = { ...asked, format: 'json' as const, limit: MAX_ROWS };
      const right = await whole(tenantA, asked);
      // The CLI's store: another instance on the same file or database, as another process opens it.
      const cli = await openSameData(opened.data);
      try {
        for (const tenant of [tenantA, null]) {
          await damageRollups(opened.data, tenantA, 1000);
          const reads = { versions: 0, answers: 0 };
          const kept = service(reads);
          const damaged = rowsOf(await kept.query(tenantA, q));
          assert.notDeepEqual(damaged, right, 'the answer is computed from the damaged rollups');
          assert.deepEqual(rowsOf(await kept.query(tenantA, q)), damaged);
          assert.equal(reads.answers, 1, 'and kept');
          // As `bucketmeter usage rebuild` runs it: the rollups of a range, then the inventory.
          await new UsageService(cli.usage, cli.inventory).rebuild(tenant, FROM - 2 * DAY, TO + 30 * DAY);
          await cli.inventory.rebuild(tenant);
          const rebuilt = rowsOf(await kept.query(tenantA, q));
          assert.equal(reads.answers, 2, `computed again after the rebuild of ${tenant === null ? 'every tenant' : 'the tenant'}`);
          assert.deepEqual(rebuilt, right, 'from the rebuilt rollups');
          assert.deepEqual(rowsOf(await kept.query(tenantA, q)), right);
          assert.equal(reads.answers, 2, 'and kept again');
        }
      } finally {
        await cli.close();
      }
    });

    it('an answer with stored bytes is computed again after an inventory rebuild in another process (of every tenant)', async () => {
      const q = { ...QUERIES[3]!, format: 'json' as const, limit: MAX_ROWS };
      const reads = { versions: 0, answers: 0 };
      const kept = service(reads);
      const first = rowsOf(await kept.query(tenantA, q));
      await kept.query(tenantA, q);
      // A usage query with storage reads the rollups and the inventory: two answer reads.
      assert.equal(reads.answers, 2, 'computed once, then kept');
      const cli = await openSameData(opened.data);
      try {
        await cli.inventory.rebuild(null);
      } finally {
        await cli.close();
      }
      assert.deepEqual(rowsOf(await kept.query(tenantA, q)), first, 'the same events, the same answer');
      assert.equal(reads.answers, 4, 'computed again: the inventory it was computed from was rewritten');
    });

    it("another tenant's cursor is answered from that tenant's own events, never from the kept answer", async () => {
      const q = { ...QUERIES[0]!, format: 'json' as const, limit: 5 };
      const reads = { versions: 0, answers: 0 };
      const shared = service(reads);
      const first = await shared.query(tenantA, q);
      const next = { ...q, cursor: first.nextCursor! };
      const theirs = await shared.query(tenantB, next);
      assert.equal(reads.answers, 2, "tenant B's page was computed");
      assert.deepEqual(rowsOf(theirs), rowsOf(await service({ versions: 0, answers: 0 }, { rows: 0 }).query(tenantB, next)));
      assert.notDeepEqual(rowsOf(theirs), rowsOf(await shared.query(tenantA, next)), "B's events are not A's");
      assert.equal(reads.answers, 2, "A's answer is still kept");
    });

    it('a late event between pages is in the next page (the answer is computed again)', async () => {
      const q = { ...QUERIES[0]!, format: 'json' as const, limit: 5 };
      const reads = { versions: 0, answers: 0 };
      const kept = service(reads);
      const first = await kept.query(tenantA, q);
      const next = { ...q, cursor: first.nextCursor! };
      const [row] = pageRows(await kept.query(tenantA, next));
      assert.equal(reads.answers, 1);
      // One more event in the next page's first row.
      const [customerId, featureId] = row!.values;
      await commit(tenantA, [{ action: 'HeadBucket', timestamp: row!.start + 60, provider: 'aws', bucket: 'b0', customerId, ...(featureId === null ? {} : { featureId }) } as NormalizedEvent]);
      const late = await kept.query(tenantA, next);
      assert.equal(reads.answers, 2, 'computed again');
      assert.equal(pageRows(late)[0]!.measures[0], row!.measures[0]! + 1n, 'the late event is counted');
      assert.deepEqual(rowsOf(late), rowsOf(await service({ versions: 0, answers: 0 }, { rows: 0 }).query(tenantA, next)));
      // The answer computed for that next page is kept: the first page is sliced from it too.
      await kept.query(tenantA, q);
      assert.equal(reads.answers, 2, 'the first page from the answer computed again');
      // An event after the range's last day changes nothing it depends on: the answer is kept.
      await commit(tenantA, [{ action: 'HeadBucket', timestamp: TO + 2 * DAY, provider: 'aws', bucket: 'b0' } as NormalizedEvent]);
      await kept.query(tenantA, next);
      assert.equal(reads.answers, 2, 'kept across a later event');
    });
  });
}

describe('usage: the bound on kept answers', () => {
  it("holds one tenant to its share: it pushes out its own answers, not another's", () => {
    const kept = new KeptAnswers<string>({ rows: 10, share: 0.5 });
    kept.set(2, 'b', '1', 'B', 3);
    for (const id of ['a1', 'a2', 'a3']) kept.set(1, id, '1', id, 4);
    assert.equal(kept.get(2, 'b', '1'), 'B', "the other tenant's answer stays");
    assert.equal(kept.get(1, 'a3', '1'), 'a3');
    assert.equal(kept.get(1, 'a1', '1'), undefined, 'its own oldest went');
    assert.equal(kept.rows, 3 + 4);
    kept.set(1, 'big', '1', 'big', 6);
    assert.equal(kept.get(1, 'big', '1'), undefined, 'more than the share is not kept');
  });

  it('gives an answer only to its tenant, at its version, within its time', () => {
    let now = 0;
    const kept = new KeptAnswers<string>({ rows: 10, ttlMs: 1000, now: () => now });
    kept.set(1, 'q', '5', 'A', 2);
    assert.equal(kept.get(2, 'q', '5'), undefined, 'another tenant');
    assert.equal(kept.get(1, 'q', '6'), undefined, 'another version');
    assert.equal(kept.rows, 0, 'and a stale answer is dropped');
    kept.set(1, 'q', '5', 'A', 2);
    now = 1000;
    assert.equal(kept.get(1, 'q', '5'), 'A');
    now = 1001;
    assert.equal(kept.get(1, 'q', '5'), undefined, 'expired');
  });
});

after(dropFreshStores);
