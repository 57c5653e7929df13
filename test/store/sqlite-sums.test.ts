/**
 * SQLite's writer sums each shape's usage while it inserts the events, and a fold writes those sums
 * (usage-sums.ts); seqs they do not cover (stored before a restart, by a transaction that failed,
 * past 2^53, past the sums' bound) are folded from the events. Whichever way each fold went, every
 * rollup row must be what a rebuild from the events gives. Generated histories on a real SQLite file
 * and writer thread: shuffled and late timestamps over three days, every kind, resent eventIds (in
 * runs of eight: the multi-row insert taken back), transactions rolled back after their first
 * events went in, restarts, folds at any point, sums past 2^53 pending and rollup rows past 2^63.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { KINDS, MAX_EVENT_BYTES } from '../../src/events/catalogue.js';
import type { ActionName, NormalizedEvent } from '../../src/events/catalogue.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { attachDerived, derivedPath } from '../../src/store/sqlite/derived.js';
import type { Store } from '../../src/store/types.js';
import { SHAPES, WIDE_MEASURE_COLUMNS, keyColumns } from '../../src/usage/shapes.js';
import { fullEvent, newTenant } from './contract.js';
import { scratchDir } from '../support/scratch.js';

const T = Date.UTC(2026, 2, 1) / 1000;
const DAYS = 3;
/** Events at this timestamp make their transaction fail (a trigger), after the ones before them went in. */
const POISON = T - 86400;
/** What a bump adds to every rollup row's byte measures' high parts: 2^40 × 2^24, past 2^63. */
const BUMP = 2n ** 40n;
const KIND_NAMES = Object.keys(KINDS) as ActionName[];

interface Ev {
  tenant: number;
  second: number;
  kind: ActionName;
  bytes: number | undefined;
  billable: boolean;
  customer: number | undefined;
  feature: number | undefined;
  client: number | undefined;
  id: number | undefined;
}

const ev: fc.Arbitrary<Ev> = fc.record({
  tenant: fc.nat(1),
  second: fc.nat(DAYS * 86400 - 1),
  kind: fc.oneof(fc.constant<ActionName>('GetObject'), fc.constantFrom(...KIND_NAMES)),
  bytes: fc.option(fc.oneof(fc.nat(5000), fc.constant(MAX_EVENT_BYTES - 1)), { nil: undefined }),
  billable: fc.boolean(),
  customer: fc.option(fc.nat(3), { nil: undefined }),
  feature: fc.option(fc.nat(2), { nil: undefined }),
  client: fc.option(fc.nat(3), { nil: undefined }),
  // Nearly all with an eventId from a small pool: runs of eight (one multi-row insert), some resent.
  id: fc.option(fc.nat(60), { nil: undefined, freq: 12 }),
});

/**
 * A few events (one that fits the sums' bound after a larger one did not), or many: runs of eight
 * that each go in as one multi-row insert.
 */
const commitEvents = fc.oneof(fc.array(ev, { minLength: 1, maxLength: 3 }), fc.array(ev, { minLength: 8, maxLength: 40, size: 'max' }));

type Op =
  | { type: 'commit'; events: Ev[] }
  | { type: 'fail'; events: Ev[] }
  | { type: 'huge'; tenant: number; second: number }
  | { type: 'restart' }
  | { type: 'fold' }
  | { type: 'bump' };

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ type: fc.constant('commit' as const), events: commitEvents }), weight: 8 },
  { arbitrary: fc.record({ type: fc.constant('fail' as const), events: fc.array(ev, { minLength: 1, maxLength: 20 }) }), weight: 2 },
  { arbitrary: fc.record({ type: fc.constant('huge' as const), tenant: fc.nat(1), second: fc.nat(DAYS * 86400 - 1) }), weight: 1 },
  { arbitrary: fc.constant({ type: 'restart' as const }), weight: 1 },
  { arbitrary: fc.constant({ type: 'fold' as const }), weight: 3 },
  { arbitrary: fc.constant({ type: 'bump' as const }), weight: 1 },
);

function event(e: Ev, tag: string): NormalizedEvent {
  const out = fullEvent(e.kind, T + e.second, e.id === undefined ? undefined : `${tag}-${e.id}`) as unknown as Record<string, unknown>;
  for (const [field, value] of [['customerId', e.customer], ['featureId', e.feature], ['clientId', e.client]] as const) {
    if (value === undefined) delete out[field];
    else out[field] = `${field}-${value}`;
  }
  if ('bytes' in out) {
    if (e.bytes === undefined) delete out.bytes;
    else out.bytes = e.bytes;
  }
  if ('isBillableEgress' in out) out.isBillableEgress = e.billable;
  return out as unknown as NormalizedEvent;
}

type Rows = Map<string, bigint[]>;

/** Every rollup row of every shape: key → stored columns, by shape. */
function rollups(path: string): Map<string, Rows> {
  const db = new Database(derivedPath(path), { readonly: true });
  try {
    return new Map(
      SHAPES.map((shape) => {
        const keys = keyColumns(shape).length;
        const rows = db.prepare(`SELECT * FROM ${shape.table}`).safeIntegers(true).raw(true).all() as bigint[][];
        return [shape.name, new Map(rows.map((row) => [row.slice(0, keys).join('/'), row.slice(keys)]))];
      }),
    );
  } finally {
    db.close();
  }
}

/** After a last fold, every rollup row is what a rebuild from the events gives, plus `bumped` (per shape, key → high parts added). */
async function assertFoldedAsRebuilt(store: Store, path: string, bumped: Map<string, Map<string, bigint>>): Promise<void> {
  await store.usage.catchUp();
  const folded = rollups(path);
  const hour = Math.floor(T / 86400) * 24;
  await store.usage.rebuild(null, hour - 24, hour + (DAYS + 1) * 24);
  const rebuilt = rollups(path);
  // The bumps, added to the rebuilt rows: what the folds kept adding to.
  const wide = WIDE_MEASURE_COLUMNS.length;
  for (const [shape, rows] of rebuilt) {
    for (const [key, bump] of bumped.get(shape) ?? []) {
      const row = rows.get(key)!;
      for (let w = 0; w < wide; w++) row[row.length - wide + w]! += bump;
    }
  }
  assert.deepEqual(folded, rebuilt);
}

describe('sqlite usage fold from the sums the writer kept', () => {
  it('gives every rollup row a fold from the events gives, after any history of commits, failures, restarts and folds', { timeout: 300_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), fc.constantFrom(undefined, 30, 300), async (ops, sumRows) => {
        const temp = scratchDir('bm-sums-');
        const path = join(temp.dir, 'bucketmeter.db');
        const open = () => openSqliteStore({ path, ...(sumRows === undefined ? {} : { usageSumRows: sumRows }) });
        let store: Store = await open();
        try {
          const tenants = [(await newTenant(store)).tenantId, (await newTenant(store)).tenantId];
          const side = new Database(path);
          // The rollups are in the derived file.
          attachDerived(side, path);
          side.exec(`CREATE TRIGGER poison BEFORE INSERT ON events WHEN NEW.timestamp = ${POISON} BEGIN SELECT RAISE(ABORT, 'poisoned'); END`);
          // Per shape, the keys of the rows each bump found (they stay: only a rebuild deletes rows).
          const bumped = new Map<string, Map<string, bigint>>(SHAPES.map((shape) => [shape.name, new Map()]));
          const commit = (tenant: number, events: NormalizedEvent[]) =>
            store.commit({ events: events.map((e) => ({ tenantId: tenants[tenant]!, receivedAt: T + DAYS * 86400, event: e })), quarantine: [] });
          let n = 0;
          for (const o of ops) {
            const tag = `u${n++}`;
            if (o.type === 'commit') {
              // Each event's eventId from its unit or, for some, an earlier unit's: resent.
              for (const tenant of [0, 1]) {
                const events = o.events.filter((e) => e.tenant === tenant).map((e) => event(e, e.id !== undefined && e.id % 7 === 0 ? 'old' : tag));
                if (events.length > 0) await commit(tenant, events);
              }
            } else if (o.type === 'fail') {
              const events = [...o.events.map((e) => event(e, tag)), { ...event(o.events[0]!, `${tag}-p`), timestamp: POISON } as NormalizedEvent];
              await assert.rejects(commit(0, events));
            } else if (o.type === 'huge') {
              // 520 × (2^44 - 1): past 2^53 in one row.
              const big = Array.from({ length: 520 }, (_, i) => event({ tenant: o.tenant, second: o.second, kind: 'GetObject', bytes: MAX_EVENT_BYTES - 1, billable: true, customer: 1, feature: undefined, client: 1, id: undefined }, `${tag}-${i}`));
              await commit(o.tenant, big);
            } else if (o.type === 'restart') {
              await store.close();
              store = await open();
            } else if (o.type === 'fold') await store.usage.catchUp();
            else {
              for (const shape of SHAPES) {
                const set = WIDE_MEASURE_COLUMNS.map((c) => `${c}_hi = ${c}_hi + ${BUMP}`).join(', ');
                side.prepare(`UPDATE ${shape.table} SET ${set}`).run();
                const keys = keyColumns(shape);
                for (const key of side.prepare(`SELECT ${keys.join(', ')} FROM ${shape.table}`).safeIntegers(true).raw(true).all() as bigint[][]) {
                  const k = key.join('/');
                  bumped.get(shape.name)!.set(k, (bumped.get(shape.name)!.get(k) ?? 0n) + BUMP);
                }
              }
            }
          }
          side.close();
          await assertFoldedAsRebuilt(store, path, bumped);
        } finally {
          await store.close();
          await temp.remove();
        }
      }),
      // A failure's shrinking opens a store per try: bounded, the best counterexample so far reported.
      { numRuns: 40, interruptAfterTimeLimit: 150_000, markInterruptAsFailure: true },
    );
  });
  it('folds from the events a commit the sums\' bound kept out, between two it summed', async () => {
    const temp = scratchDir('bm-sums-');
    const path = join(temp.dir, 'bucketmeter.db');
    // c and d in transactions of their own (not merged into one).
    const open = () => openSqliteStore({ path, usageSumRows: 100, maxGroupEvents: 20 });
    let store = await open();
    try {
      const tenantId = (await newTenant(store)).tenantId;
      const events = (tag: string, n: number) =>
        Array.from({ length: n }, (_, i) => event({ tenant: 0, second: i * 3600, kind: 'GetObject', bytes: 100 + i, billable: true, customer: i % 4, feature: i % 3, client: i % 2, id: i }, tag));
      const commit = (tag: string, n: number) => store.commit({ events: events(tag, n).map((event) => ({ tenantId, receivedAt: T + DAYS * 86400, event })), quarantine: [] });
      // Unfolded when the writer restarts: a backlog before any sums, so the bound cannot fold them away.
      await commit('a', 2);
      await store.close();
      store = await open();
      await commit('b', 2);
      // c: past the bound with b's sums, not summed (the writer asks for a fold). d: sent with it, so
      // queued before that fold takes the sums: within the bound again, but after c, not summed either.
      await Promise.all([commit('c', 20), commit('d', 2)]);
      await assertFoldedAsRebuilt(store, path, new Map());
    } finally {
      await store.close();
      await temp.remove();
    }
  });
  it('folds the events after a commit that stored nothing (every event resent), then one not summed', async () => {
    const temp = scratchDir('bm-sums-');
    const path = join(temp.dir, 'bucketmeter.db');
    const store = await openSqliteStore({ path });
    try {
      const tenantId = (await newTenant(store)).tenantId;
      const commit = (events: NormalizedEvent[]) => store.commit({ events: events.map((event) => ({ tenantId, receivedAt: T + DAYS * 86400, event })), quarantine: [] });
      const two = [0, 1].map((i) => event({ tenant: 0, second: i, kind: 'GetObject', bytes: 10, billable: true, customer: 0, feature: 0, client: 0, id: i }, 'r'));
      await commit(two);
      await store.usage.catchUp();
      const resent = await commit(two);
      assert.ok(resent.every((outcome) => outcome.duplicate));
      await store.usage.catchUp();
      // Past 2^53 bytes: not summed, folded from the events (520 × (2^44 - 1)).
      await commit(Array.from({ length: 520 }, (_, i) => event({ tenant: 0, second: 7200, kind: 'GetObject', bytes: MAX_EVENT_BYTES - 1, billable: true, customer: 1, feature: undefined, client: 1, id: undefined }, `h${i}`)));
      let timer: NodeJS.Timeout | undefined;
      const stuck = new Promise<'stuck'>((done) => {
        timer = setTimeout(() => done('stuck'), 10_000);
      });
      assert.equal(await Promise.race([store.usage.catchUp(), stuck]), undefined, 'the fold reached the last seq stored');
      clearTimeout(timer);
      await assertFoldedAsRebuilt(store, path, new Map());
    } finally {
      await store.close();
      await temp.remove();
    }
  });
  it('folds at once, with no catch-up, the sums past a quarter of their bound, each event once', async () => {
    // A fold asked past 100 rows. Each event its own hour and customer: a row of its own in five
    // shapes of six, six at most; 22 events are within the bound (summed), and past 100 rows.
    await foldedAtOnce(400, (i) => ({ tenant: 0, second: i * 3600, kind: 'GetObject', bytes: 100 + i, billable: true, customer: i, feature: 0, client: 0, id: undefined }));
  });
  it('folds at once, with no catch-up, the sums before a commit their bound kept out', async () => {
    // A fold asked past 25 rows: the first 2 events stay below it, and the 20 after them would pass the bound.
    await foldedAtOnce(100, (i) => ({ tenant: 0, second: (i % 20) * 3600, kind: 'PutObject', bytes: 7 + i, billable: false, customer: i % 5, feature: 1, client: 2, id: i }));
  });
});

/**
 * Commits 2 events (12 rows at most: no fold asked), then 20 more, `event(i)` the i-th: folded, with
 * nothing here asking for a fold, to the rows a rebuild gives.
 */
async function foldedAtOnce(usageSumRows: number, ev: (i: number) => Ev): Promise<void> {
  const temp = scratchDir('bm-sums-');
  const path = join(temp.dir, 'bucketmeter.db');
  const store = await openSqliteStore({ path, usageSumRows });
  try {
    const tenantId = (await newTenant(store)).tenantId;
    let n = 0;
    const commit = (count: number) => {
      const events = Array.from({ length: count }, () => event(ev(n++), 'e'));
      return store.commit({ events: events.map((e) => ({ tenantId, receivedAt: T + DAYS * 86400, event: e })), quarantine: [] });
    };
    await commit(2);
    await new Promise((done) => setTimeout(done, 300));
    assert.equal((await store.usage.lag()).pendingEvents, 2, 'nothing folded below the threshold');
    await commit(20);
    await waitFolded(store);
    await assertFoldedAsRebuilt(store, path, new Map());
  } finally {
    await store.close();
    await temp.remove();
  }
}

/** Until every stored event is folded (at most 10 s): the store's own fold, as nothing here asks for one. */
async function waitFolded(store: Store): Promise<void> {
  const until = Date.now() + 10_000;
  while ((await store.usage.lag()).pendingEvents !== 0) {
    assert.ok(Date.now() < until, 'the events were folded without a catch-up');
    await new Promise((done) => setTimeout(done, 20));
  }
}
