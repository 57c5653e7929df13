/**
 * The group committer over a real SQLite store: concurrent units share commits, each caller gets its
 * own outcomes, a full queue refuses at once, a failing store answers 503, close drains.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BmError } from '../../src/errors.js';
import { Committer } from '../../src/ingest/committer.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { CommitUnit, Store } from '../../src/store/types.js';
import { tempDir } from '../support/server.js';

const TENANT = 1;

function unit(eventId: string, tenantId = TENANT): CommitUnit {
  return { events: [{ tenantId, receivedAt: 1_714_564_800, event: { action: 'ListBuckets', timestamp: 1_714_564_800, provider: 'aws', eventId } }], quarantine: [] };
}

/** The real store, counting how many commits reach it. */
function counted(store: Store): { commit: Store['commit']; calls: () => number } {
  let calls = 0;
  return {
    commit: (u) => {
      calls++;
      return store.commit(u);
    },
    calls: () => calls,
  };
}

async function withStore(run: (store: Store) => Promise<void>): Promise<void> {
  const store = await openSqliteStore({ path: join(tempDir(), 'c.db') });
  try {
    await run(store);
  } finally {
    await store.close();
  }
}

describe('Committer', () => {
  it('merges units submitted in one turn into one commit and hands each caller its own outcome', () =>
    withStore(async (store) => {
      const { commit, calls } = counted(store);
      const committer = new Committer({ commit, maxGroupEvents: 10_000, maxQueueEvents: 10_000, maxInFlight: 1 });
      const ids = Array.from({ length: 200 }, (_, i) => `e-${i}`);
      const outcomes = await Promise.all([...ids, 'e-7'].map((id) => committer.submit(unit(id))));
      assert.deepEqual(outcomes.slice(0, 200).map((o) => o[0]!.eventId), ids);
      assert.ok(outcomes.slice(0, 200).every((o) => o[0]!.duplicate === false));
      assert.deepEqual(outcomes[200], [{ eventId: 'e-7', duplicate: true }], 'a resend in the same group is a duplicate');
      assert.equal(calls(), 1, 'one flush on the next turn takes the whole queue, within maxGroupEvents');
      const page = await store.listEvents(TENANT, { limit: 1000 });
      assert.equal(page.events.length, 200);
    }));

  it('merged units that replay quarantine entries mark every one of them', () =>
    withStore(async (store) => {
      const quarantined = { tenantId: TENANT, receivedAt: 1_714_564_800, code: 'BM_ERR_EVENT_INVALID', errors: [], source: 'POST /s3', body: Buffer.from('{}'), truncated: false };
      await store.commit({ events: [], quarantine: [quarantined, quarantined] });
      const [a, b] = await store.quarantine.list({ tenantId: TENANT, limit: 10, includeReplayed: false });
      const { commit, calls } = counted(store);
      const committer = new Committer({ commit, maxGroupEvents: 10_000, maxQueueEvents: 10_000, maxInFlight: 1 });
      const replaying = (id: string, entry: number): CommitUnit => ({ ...unit(id), replayed: { ids: [entry], at: 1_714_564_900 } });
      await Promise.all([committer.submit(replaying('r-1', a!.id)), committer.submit(unit('plain')), committer.submit(replaying('r-2', b!.id))]);
      assert.equal(calls(), 1, 'the three units went in one commit');
      assert.deepEqual((await store.quarantine.list({ tenantId: TENANT, limit: 10, includeReplayed: true })).map((e) => e.replayedAt), [1_714_564_900, 1_714_564_900]);
    }));

  it('splits groups at maxGroupEvents', () =>
    withStore(async (store) => {
      const { commit, calls } = counted(store);
      const committer = new Committer({ commit, maxGroupEvents: 10, maxQueueEvents: 10_000, maxInFlight: 1 });
      await Promise.all(Array.from({ length: 35 }, (_, i) => committer.submit(unit(`s-${i}`))));
      assert.equal(calls(), 4);
    }));

  it('refuses with 503 + Retry-After once the queue is full, and takes units again after', () =>
    withStore(async (store) => {
      const committer = new Committer({ commit: (u) => store.commit(u), maxGroupEvents: 1000, maxQueueEvents: 5, maxInFlight: 1 });
      const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => committer.submit(unit(`o-${i}`))));
      const refused = results.filter((r) => r.status === 'rejected');
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 5);
      for (const r of refused) {
        assert.ok(r.reason instanceof BmError);
        assert.equal(r.reason.code, 'BM_ERR_OVERLOADED');
        assert.equal(r.reason.status, 503);
        assert.equal(r.reason.extra.retryAfter, 1);
      }
      assert.equal((await committer.submit(unit('after'))).length, 1);
      const page = await store.listEvents(TENANT, { limit: 1000 });
      assert.equal(page.events.length, 6, 'exactly the accepted units are stored');
    }));

  it('answers 503 store-unavailable when the store cannot commit, and stores nothing', async () => {
    const store = await openSqliteStore({ path: join(tempDir(), 'closed.db') });
    await store.close();
    const committer = new Committer({ commit: (u) => store.commit(u), maxGroupEvents: 1000, maxQueueEvents: 1000, maxInFlight: 1 });
    await assert.rejects(committer.submit(unit('x')), (error: unknown) => error instanceof BmError && error.code === 'BM_ERR_STORE_UNAVAILABLE' && error.status === 503);
    assert.equal(committer.failedWithin(60_000), true);
  });

  it('answers 503 within the commit timeout while the store hangs, queued units too, and recovers', () =>
    withStore(async (store) => {
      let release!: () => void;
      const held = new Promise<void>((go) => (release = go));
      let first = true;
      // The first commit reaches the store only when released, as over a connection that stopped answering.
      const commit: Store['commit'] = async (u) => {
        if (first) {
          first = false;
          await held;
        }
        return store.commit(u);
      };
      const committer = new Committer({ commit, maxGroupEvents: 1000, maxQueueEvents: 1000, maxInFlight: 1, commitTimeoutMs: 300 });
      const started = performance.now();
      const inFlight = committer.submit(unit('h-1'));
      await new Promise((next) => setImmediate(next));
      const queued = [committer.submit(unit('h-2')), committer.submit(unit('h-3'))];
      const answers = await Promise.allSettled([inFlight, ...queued]);
      const waited = performance.now() - started;
      for (const answer of answers) {
        assert.equal(answer.status, 'rejected');
        assert.ok(answer.reason instanceof BmError && answer.reason.code === 'BM_ERR_STORE_UNAVAILABLE', String(answer.reason));
      }
      assert.ok(waited >= 290 && waited < 2000, `answered after ${waited} ms`);
      assert.equal(committer.failedWithin(60_000), true);
      release();
      assert.equal((await committer.submit(unit('h-4'))).length, 1, 'commits again once the store answers');
      const stored = (await store.listEvents(TENANT, { limit: 10 })).events.map((e) => e.eventId).sort();
      // The held commit went through late (stored, never acknowledged); the expired queued units never reached the store.
      assert.deepEqual(stored, ['h-1', 'h-4']);
    }));

  it('close waits for pending units and refuses new ones', () =>
    withStore(async (store) => {
      const committer = new Committer({ commit: (u) => store.commit(u), maxGroupEvents: 1000, maxQueueEvents: 1000, maxInFlight: 1 });
      const pending = Array.from({ length: 50 }, (_, i) => committer.submit(unit(`c-${i}`)));
      await committer.close();
      assert.equal((await Promise.all(pending)).length, 50);
      await assert.rejects(committer.submit(unit('late')), (error: unknown) => error instanceof BmError && error.code === 'BM_ERR_SHUTTING_DOWN');
    }));
});
