/**
 * PostgreSQL's background fold (usage-fold.ts BUSY_FOLD_MS): while the process commits it folds at
 * most every BUSY_FOLD_MS, in larger and so cheaper batches; once commits pause it folds at its next
 * call; a read folds first whatever was left, and a plain catchUp folds everything.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { IDLE_MS } from '../../src/store/background-pace.js';
import { BUSY_FOLD_MS } from '../../src/store/postgres/usage-fold.js';
import type { Store } from '../../src/store/types.js';
import { SHAPES } from '../../src/usage/shapes.js';
import { T0, newTenant } from '../store/contract.js';
import { dropScratchDatabases, scratchDatabase } from '../support/scratch.js';

const SKIP = process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set: PostgreSQL background fold test SKIPPED';
const DAY = Math.floor(T0 / 86400);

after(dropScratchDatabases);

async function withStore(run: (store: Store, commit: (n: number) => Promise<void>, tenantId: number) => Promise<void>): Promise<void> {
  const { url } = await scratchDatabase();
  const store = await openPostgresStore({ url, poolMax: 4 });
  try {
    const tenantId = (await newTenant(store)).tenantId;
    let next = 0;
    const commit = async (n: number) => {
      const events = Array.from({ length: n }, () => {
        const i = next++;
        return { tenantId, receivedAt: T0, event: { action: 'GetObject', timestamp: T0 + i, provider: 'aws', bucket: `b${i % 3}`, objectKey: 'k', bytes: i } as unknown as NormalizedEvent };
      });
      await store.commit({ events, quarantine: [] });
    };
    await run(store, commit, tenantId);
  } finally {
    await store.close();
  }
}

const pending = async (store: Store) => (await store.usage.lag()).pendingEvents;

describe('PostgreSQL background fold', { skip: SKIP }, () => {
  it('waits while this process commits, BUSY_FOLD_MS after the last, and a read still counts every event', async () => {
    await withStore(async (store, commit, tenantId) => {
      await commit(10);
      // Never folded in the background before: it folds now.
      await store.usage.catchUp({ background: true });
      const folded = performance.now();
      assert.equal(await pending(store), 0);
      await commit(10);
      await store.usage.catchUp({ background: true });
      assert.equal(await pending(store), 10, 'just committed and folded under BUSY_FOLD_MS ago: left for a later fold');
      // A read folds first: every event counted, in every shape.
      const [check] = await store.usage.reconcile(tenantId, DAY, DAY + 1);
      assert.equal(check!.events[0], 20n);
      for (const shape of SHAPES) assert.deepEqual(check!.rollups[shape.name], check!.events, shape.name);
      assert.equal(await pending(store), 0);
      await sleep(Math.max(0, folded + BUSY_FOLD_MS - performance.now()) + 20);
      await commit(10);
      await store.usage.catchUp({ background: true });
      assert.equal(await pending(store), 0, 'BUSY_FOLD_MS since the last background fold: it folds, though still committing');
      await commit(10);
      await store.usage.catchUp();
      assert.equal(await pending(store), 0, 'a plain catchUp folds everything, right after a commit');
    });
  });

  it('folds at its next call once commits pause, however soon after the last fold', async () => {
    await withStore(async (store, commit) => {
      await commit(10);
      await store.usage.catchUp({ background: true });
      const folded = performance.now();
      await commit(10);
      await sleep(IDLE_MS + 20);
      await store.usage.catchUp({ background: true });
      assert.ok(performance.now() - folded < BUSY_FOLD_MS, 'the test ran within BUSY_FOLD_MS of the first fold');
      assert.equal(await pending(store), 0);
    });
  });
});

