/**
 * PostgreSQL rollup rows written in other shards (before migration 6, commits spread hot rows over 16
 * shards) are part of their key's counts for every read: the grouped read (windows of several rollup
 * rows) and the direct one (each rollup row one answer row, read in key order, a key's shards summed
 * as they come). Real PostgreSQL; the older rows are written as migration 5 left them.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { parseUsageParams } from '../../src/usage/params.js';
import { UsageService } from '../../src/usage/service.js';
import { usageJson } from '../../src/usage/format.js';
import { getObject, newTenant } from '../store/contract.js';
import { dropScratchDatabases, scratchDatabase, withPg } from '../support/scratch.js';

const T0 = Date.UTC(2026, 2, 1) / 1000;
const DAY = T0 / 86400;

after(dropScratchDatabases);

describe('usage on PostgreSQL: rows in other shards', { skip: process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set: SKIPPED' }, () => {
  it('are summed with shard 0 by the direct and the grouped reads', async () => {
    const { url } = await scratchDatabase();
    const store = await openPostgresStore({ url, poolMax: 2 });
    try {
      const { tenantId } = await newTenant(store);
      // Customers a and b on two days: 3 and 2 events on day 1, 1 on day 2 (customer a).
      const events = [
        getObject(T0 + 60, { customerId: 'a', bytes: 10 }),
        getObject(T0 + 120, { customerId: 'a', bytes: 20 }),
        getObject(T0 + 180, { customerId: 'a', bytes: 30 }),
        getObject(T0 + 240, { customerId: 'b', bytes: 1 }),
        getObject(T0 + 300, { customerId: 'b', bytes: 2 }),
        getObject(T0 + 86400 + 60, { customerId: 'a', bytes: 7 }),
      ];
      await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: T0 + 2 * 86400, event })), quarantine: [] });
      await store.usage.catchUp();
      // As migration 5 left them: customer a's day-1 row also in shards 3 and 9.
      await withPg(url, async (client) => {
        const { rows } = await client.query<{ customer: number }>('SELECT customer FROM usage_customer_day WHERE tenant = $1 AND day = $2 AND customer <> 0 ORDER BY requests DESC LIMIT 1', [tenantId, DAY]);
        for (const shard of [3, 9]) {
          await client.query('INSERT INTO usage_customer_day (tenant, day, customer, shard, requests, read_bytes, egress_bytes, written_bytes) VALUES ($1, $2, $3, $4, 100, 1000, 1000, 0)', [tenantId, DAY, rows[0]!.customer, shard]);
        }
      });
      const usage = new UsageService(store.usage, store.inventory);
      const answer = async (query: Record<string, string>) => {
        const request = parseUsageParams({ from: '2026-03-01T00:00:00Z', to: '2026-03-03T00:00:00Z', groupBy: 'customerId', ...query });
        const { rows } = JSON.parse(usageJson(request, await usage.query(tenantId, request)).toString()) as { rows: { start: string; customerId: string; requests: number; readBytes: number }[] };
        return rows.map((r) => [r.start.slice(0, 10), r.customerId, r.requests, r.readBytes]);
      };
      assert.deepEqual(await answer({ granularity: 'day' }), [
        ['2026-03-01', 'a', 203, 2060],
        ['2026-03-01', 'b', 2, 3],
        ['2026-03-02', 'a', 1, 7],
      ]);
      assert.deepEqual(await answer({}), [
        ['2026-03-01', 'a', 204, 2067],
        ['2026-03-01', 'b', 2, 3],
      ]);
    } finally {
      await store.close();
    }
  });
});
