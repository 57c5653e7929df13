/**
 * PostgreSQL's usage fold reads the events its outbox rows name, by index, not every event stored:
 * as a join, the planner hashed the rows and scanned the whole events table on every fold (262 of a
 * fold's 532 ms for 20,000 events among 220,000), so a fold cost more the more was stored.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { FOLD_SQL } from '../../src/store/postgres/usage-sql.js';
import { SHAPES } from '../../src/usage/shapes.js';
import { T0, newTenant } from '../store/contract.js';
import { eventsRowsScanned } from '../support/explain.js';
import { dropScratchDatabases, scratchDatabase } from '../support/scratch.js';

const SKIP = process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set: PostgreSQL fold plan test SKIPPED';

after(dropScratchDatabases);

describe('PostgreSQL usage fold plan', { skip: SKIP }, () => {
  it('scans only the pending events, however many are folded already', async () => {
    const { url } = await scratchDatabase();
    const store = await openPostgresStore({ url, poolMax: 4 });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const tenantId = (await newTenant(store)).tenantId;
      const event = (i: number) => ({ tenantId, receivedAt: T0, event: { action: 'GetObject', timestamp: T0 + (i % 86400), provider: 'aws', bucket: `b${i % 7}`, objectKey: 'k', bytes: i } as unknown as NormalizedEvent });
      const FOLDED = 40_000;
      for (let b = 0; b < FOLDED; b += 5000) await store.commit({ events: Array.from({ length: 5000 }, (_, k) => event(b + k)), quarantine: [] });
      await store.usage.catchUp();
      // Pending: a COPY of 1,000 (one outbox row) and 50 single-event commits (a row each).
      await store.commit({ events: Array.from({ length: 1000 }, (_, k) => event(FOLDED + k)), quarantine: [] });
      for (let k = 0; k < 50; k++) await store.commit({ events: [event(FOLDED + 1000 + k)], quarantine: [] });
      const PENDING = 1050;
      assert.equal((await store.usage.lag()).pendingEvents, PENDING);
      await client.query('BEGIN');
      const scanned = await eventsRowsScanned((config) => client.query(config), { text: FOLD_SQL, values: ['9223372036854775807', 20_000] });
      await client.query('ROLLBACK');
      assert.ok(scanned >= PENDING && scanned <= 1.1 * PENDING, `${scanned} events rows scanned, ${PENDING} pending among ${FOLDED + PENDING}`);
      // And the fold so planned is exact: every shape holds the day's events.
      await store.usage.catchUp();
      const [check] = await store.usage.reconcile(tenantId, Math.floor(T0 / 86400), Math.floor(T0 / 86400) + 1);
      const total = BigInt(FOLDED + PENDING);
      assert.deepEqual(check!.events, [total, (total * (total - 1n)) / 2n, (total * (total - 1n)) / 2n, 0n]);
      for (const shape of SHAPES) assert.deepEqual(check!.rollups[shape.name], check!.events, shape.name);
    } finally {
      await client.end();
      await store.close();
    }
  });
});
