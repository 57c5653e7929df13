/**
 * The bench-only switch that stores events without the inventory's feed on PostgreSQL
 * (BUCKETMETER_BENCH_NO_INVENTORY, openPostgresStore's `inventory: false`), which the bench uses to
 * measure the usage rollups alone: by both commit paths (one statement, and COPY), no inventory outbox
 * row is written, so the inventory stays empty, and the usage rollups and receipts are exact, as with
 * the feed on. Needs TEST_DATABASE_URL.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import type { CommitUnit, EventToStore, Store, UsageDayCheck } from '../../src/store/types.js';
import { SHAPES } from '../../src/usage/shapes.js';
import { dropScratchDatabases, scratchDatabase, withPg } from '../support/scratch.js';

const SKIP = process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set: PostgreSQL bench switch tests SKIPPED';

after(dropScratchDatabases);

const T = Date.parse('2026-03-02T10:00:00Z') / 1000;
const DAY = Math.floor(T / 86400);

/** Event i of a tenant: puts, gets (some not billable) and deletes of 40 keys over two hours; every third with a client eventId. */
function event(tenantId: number, i: number, eventId = i % 3 === 0 ? `e${i}` : undefined): EventToStore {
  const kind = i % 5 < 2 ? 'PutObject' : i % 5 < 4 ? 'GetObject' : 'DeleteObject';
  const record: Record<string, unknown> = { action: kind, timestamp: T + (i % 7200), provider: 'aws', bucket: 'b', objectKey: `k${i % 40}`, customerId: `c${i % 4}` };
  if (kind !== 'DeleteObject') record.bytes = 1000 + i;
  if (kind === 'GetObject' && i % 4 === 0) record.isBillableEgress = false;
  if (eventId !== undefined) record.eventId = eventId;
  return { tenantId, receivedAt: T + 60, event: record as unknown as NormalizedEvent };
}

/**
 * The same units for either store: one of 1,200 events of tenant `a` (COPY), with an eventId sent
 * twice in it; then one of 30 events of both tenants (one statement), 5 of them eventIds `a` stored
 * already, with a quarantined input.
 */
function units(a: number, b: number): CommitUnit[] {
  const big = Array.from({ length: 1200 }, (_, i) => event(a, i));
  big.push(event(a, 3));
  const small = Array.from({ length: 30 }, (_, i) => (i < 5 ? event(a, i * 3) : event(i % 2 === 0 ? a : b, 2000 + i)));
  const quarantine = [{ tenantId: b, receivedAt: T + 60, code: 'BM_ERR_EVENT_INVALID', errors: [], source: 'POST /s3/batch', index: 0, body: Buffer.from('{}'), truncated: false }];
  return [{ events: big, quarantine: [] }, { events: small, quarantine }];
}

/** What the units' events of `tenant` count for usage: [requests, read bytes, billable egress bytes, written bytes], the first copy of each eventId only. */
function expected(all: CommitUnit[], tenant: number): bigint[] {
  const seen = new Set<string>();
  const sums = [0n, 0n, 0n, 0n];
  for (const { tenantId, event: e } of all.flatMap((u) => u.events)) {
    if (tenantId !== tenant) continue;
    if (e.eventId !== undefined) {
      if (seen.has(e.eventId)) continue;
      seen.add(e.eventId);
    }
    const bytes = BigInt((e as { bytes?: number }).bytes ?? 0);
    sums[0]! += 1n;
    if (e.action === 'GetObject') {
      sums[1]! += bytes;
      if ((e as { isBillableEgress?: boolean }).isBillableEgress !== false) sums[2]! += bytes;
    }
    if (e.action === 'PutObject') sums[3]! += bytes;
  }
  return sums;
}

async function run(inventory: boolean): Promise<{ outboxRows: number; inventoryRows: number; objects: number; checks: UsageDayCheck[][]; expect: bigint[][] }> {
  const { url } = await scratchDatabase();
  const store: Store = await openPostgresStore({ url, poolMax: 2, inventory });
  try {
    const a = (await store.keys.create({ id: 'ka', tenantName: 'a', hash: Buffer.from('a'), createdAt: T })).tenantId;
    const b = (await store.keys.create({ id: 'kb', tenantName: 'b', hash: Buffer.from('b'), createdAt: T })).tenantId;
    const all = units(a, b);
    for (const unit of all) await store.commit(unit);
    const count = async (table: string) =>
      Number((await withPg(url, (c) => c.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))).rows[0]!.n);
    const outboxRows = await count('inventory_outbox');
    await store.usage.catchUp();
    await store.inventory.catchUp();
    const objects = (await store.inventory.objects(a, { bucket: 'b', at: T + 7200, includeVersions: true, limit: 100 })).length;
    const checks = [await store.usage.reconcile(a, DAY, DAY + 1), await store.usage.reconcile(b, DAY, DAY + 1)];
    return { outboxRows, inventoryRows: await count('inventory'), objects, checks, expect: [expected(all, a), expected(all, b)] };
  } finally {
    await store.close();
  }
}

describe('PostgreSQL bench switch: events without the inventory feed', { skip: SKIP }, () => {
  it('writes no inventory outbox row by either commit path, and keeps usage and receipts exact', async () => {
    const off = await run(false);
    const on = await run(true);
    // With the feed on, the same units feed the inventory: each path writes its outbox row.
    assert.equal(on.outboxRows, 3, 'feed on: a row per tenant of each commit (a; a and b)');
    assert.ok(on.inventoryRows > 0 && on.objects > 0, 'feed on: the inventory is built');
    assert.equal(off.outboxRows, 0, 'feed off: no outbox row');
    assert.equal(off.inventoryRows, 0);
    assert.equal(off.objects, 0);
    for (const result of [off, on]) {
      const [[a], [b]] = result.checks as [UsageDayCheck[], UsageDayCheck[]];
      // Tenant a: 1,218 received, the eventId sent twice in the big unit and the 5 sent again duplicates.
      assert.deepEqual(a!.receipts, { received: 1218n, stored: 1212n, duplicates: 6n, rejected: 0n });
      assert.deepEqual(b!.receipts, { received: 14n, stored: 13n, duplicates: 0n, rejected: 1n });
      assert.deepEqual([a!.events, b!.events], result.expect);
      for (const [check, expect] of [[a!, result.expect[0]!], [b!, result.expect[1]!]] as const) {
        assert.equal(check.storedByArrival, expect[0]);
        for (const shape of SHAPES) assert.deepEqual(check.rollups[shape.name], expect, shape.name);
      }
    }
    assert.deepEqual(off.checks, on.checks);
  });
});
