/**
 * SQLite's writer sums each transaction's usage while it inserts the events, and a fold stages those
 * sums instead of reading the events again (usage-stage.ts); where it kept none (events stored before
 * a restart, a transaction whose sums pass 2^53, one whose events hardly share rows) the fold reads
 * the events. Whichever way each chunk
 * went, every rollup row must be what a rebuild from the events gives. Real SQLite file, real writer
 * thread, every kind of event, duplicates, two tenants, several hours and days.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { KINDS, MAX_EVENT_BYTES } from '../../src/events/catalogue.js';
import type { ActionName, NormalizedEvent } from '../../src/events/catalogue.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { Store } from '../../src/store/types.js';
import { SHAPES, keyColumns } from '../../src/usage/shapes.js';
import { fullEvent, getObject, newTenant } from './contract.js';
import { scratchDir } from '../support/scratch.js';

const T = Date.UTC(2026, 2, 1) / 1000;
const HOURS = 3 * 24;
const KIND_NAMES = Object.keys(KINDS) as ActionName[];

/**
 * Unit `u` of `n` events, some without eventId, some resent: GetObjects with and without bytes and
 * billable egress, and other kinds. Over two hours of a few customers and kinds, so that events
 * share stage rows (the writer keeps sums only then); `spread`: every kind over three days, about
 * one row per event.
 */
function unitEvents(u: number, n: number, spread = false): NormalizedEvent[] {
  return Array.from({ length: n }, (_, i) => {
    const ts = spread ? T + ((u * 7919 + i * 613) % (HOURS * 3600)) : T + u * 5 * 3600 + ((i * 613) % 7200);
    // Resent: the eventIds of the previous unit's first events, and of this unit's own first ones.
    const eventId = i % 5 === 0 ? undefined : i % 11 === 0 ? `e${u - 1}-${i % 40}` : i % 17 === 0 ? `e${u}-1` : `e${u}-${i}`;
    if (i % 3 === 0) {
      const customerId = i % 4 === 0 ? undefined : `c${i % 3}`;
      return getObject(ts, { bytes: i % 8 === 0 ? undefined : i * 1000, isBillableEgress: i % 2 === 0, customerId, clientId: `d${i % 5}`, eventId });
    }
    const event = fullEvent(KIND_NAMES[(u + i) % (spread ? KIND_NAMES.length : 6)]!, ts, eventId) as NormalizedEvent & { bytes?: number };
    // fullEvent's bytes are the largest safe integer: two in one row would pass 2^53 (that case is the huge unit's).
    if (event.bytes !== undefined) event.bytes = 1000 + i;
    return event;
  }) as NormalizedEvent[];
}

async function commit(store: Store, tenantId: number, events: NormalizedEvent[]): Promise<void> {
  await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: T + HOURS * 3600, event })), quarantine: [] });
}

/** Every rollup row of every shape, in key order. */
function rollups(path: string): Record<string, unknown[]> {
  const db = new Database(path, { readonly: true });
  try {
    return Object.fromEntries(SHAPES.map((shape) => [shape.name, db.prepare(`SELECT * FROM ${shape.table} ORDER BY ${keyColumns(shape).join(', ')}`).safeIntegers(true).raw(true).all()]));
  } finally {
    db.close();
  }
}

describe('sqlite usage fold from the sums the writer kept', () => {
  it('gives every rollup row a rebuild from the events gives, with chunks folded from kept sums and from the events', async () => {
    const temp = scratchDir('bm-stage-');
    const path = join(temp.dir, 'bucketmeter.db');
    try {
      // Stored by a writer that then stops: no sums kept for these.
      let store: Store = await openSqliteStore({ path });
      const a = (await newTenant(store)).tenantId;
      const b = (await newTenant(store)).tenantId;
      await commit(store, a, unitEvents(0, 300));
      await commit(store, b, unitEvents(1, 300));
      await store.close();
      store = await openSqliteStore({ path });
      try {
        await commit(store, a, unitEvents(2, 400));
        await commit(store, b, unitEvents(3, 400));
        await store.usage.catchUp();
        await commit(store, a, unitEvents(4, 500));
        // Sums past 2^53 in one stage row: this transaction's are not kept, its events are read.
        const huge = Array.from({ length: 2 ** 9 + 1 }, (_, i) => getObject(T + 60, { bytes: MAX_EVENT_BYTES, eventId: `huge-${i}` }));
        await commit(store, a, [...huge, ...unitEvents(5, 100)]);
        // Hardly a shared row: the writer stops summing this one, its events are read.
        await commit(store, b, unitEvents(6, 2000, true));
        await commit(store, a, unitEvents(7, 300));
        await store.usage.catchUp();
        const folded = rollups(path);
        assert.ok(folded.customer_hour!.length > 100, `${folded.customer_hour!.length} customer_hour rows`);
        const hour = Math.floor(T / 3600);
        await store.usage.rebuild(null, hour, hour + HOURS);
        assert.deepEqual(folded, rollups(path));
      } finally {
        await store.close();
      }
    } finally {
      await temp.remove();
    }
  });
});
