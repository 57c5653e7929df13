/**
 * Issue 17 on the SQLite store: a usage statement over many days stops at its next day of rows once
 * its caller left or its budget ran out, instead of running to its last row (better-sqlite3 cannot
 * interrupt a statement; the statement checks a flag between its pieces).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { openReadOnly } from '../../src/store/sqlite/connection.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import { ReaderPool, STOP_GRACE_MS } from '../../src/store/sqlite/reader-pool.js';
import type { ReadRequest, ReadResponse, ReaderThreadData } from '../../src/store/sqlite/reads.js';
import { UsageReader } from '../../src/store/sqlite/usage.js';
import { ReadTimeoutError } from '../../src/store/types.js';
import type { EventToStore, UsageStoreQuery } from '../../src/store/types.js';
import { MEASURES, SHAPES, planUsage } from '../../src/usage/shapes.js';
import { T0, getObject, newTenant } from './contract.js';

const HOURS = 24 * 60;
const PER_HOUR = 40;
const hour0 = T0 / 3600;
const TENANT_DAY = SHAPES.find((s) => s.name === 'tenant_day')!;
const REQUESTS = MEASURES.indexOf('requests');
/** Every hour of the 60 days as one window, grouped by what no stored shape keeps: read from the events, a day of them per piece. */
const WHOLE: UsageStoreQuery = {
  terms: planUsage(['clientId', 'bucket'], [hour0, hour0 + HOURS]),
  groupBy: ['clientId', 'bucket'],
  filters: {},
};

describe('SQLite usage statements stop between their pieces (issue 17)', () => {
  let dir = '';
  let path = '';
  let store: SqliteStore;
  let tenant = 0;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bm-stop-'));
    path = join(dir, 'store.db');
    store = await openSqliteStore({ path, readBudgetMs: 600_000 });
    tenant = (await newTenant(store)).tenantId;
    for (let h = 0; h < HOURS; h += 100) {
      const events: EventToStore[] = [];
      for (let i = h; i < Math.min(HOURS, h + 100); i++) {
        for (let j = 0; j < PER_HOUR; j++) events.push({ tenantId: tenant, receivedAt: T0, event: getObject(T0 + i * 3600 + j, { clientId: `c${i}-${j}` }) });
      }
      await store.commit({ events, quarantine: [] });
    }
    await store.usage.catchUp();
  });
  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the statement calls its check once per day it scans, and a check that throws ends it with that error', () => {
    const db = openReadOnly(path, 5000);
    try {
      let checks = 0;
      const counted = new UsageReader(db, () => void checks++);
      const answer = counted.query(tenant, WHOLE);
      assert.equal(answer.length, HOURS * PER_HOUR);
      assert.equal(checks, HOURS / 24);
      let left = 3;
      const stopping = new UsageReader(db, () => {
        if (--left < 0) throw new Error('stopped at a piece');
      });
      assert.throws(() => stopping.query(tenant, WHOLE), /stopped at a piece/);
      assert.equal(left, -1, 'no piece was scanned after the check threw');
    } finally {
      db.close();
    }
  });

  it("the tenant's event count (UsageReader.version: tenant_day from day 0) is a plain statement, and tenant_day queries stop between their days like every shape's", async () => {
    const db = openReadOnly(path, 5000);
    try {
      let checks = 0;
      const reader = new UsageReader(db, () => void checks++);
      const today = Math.floor(Date.now() / 86_400_000);
      assert.equal(reader.version(tenant, today).events, BigInt(HOURS * PER_HOUR));
      // One range scan of a few rows a day, as on PostgreSQL: not a pieced query (a piece a day since
      // 1970 was ~20,000 seeks and checks for every usage and cost answer's version).
      assert.equal(checks, 0);
      // Daily totals over the 60 days, as tenant_day is read for an answer: a piece a day, each checked.
      const day0 = T0 / 86_400;
      const daily: UsageStoreQuery = { terms: [{ shape: TENANT_DAY, spans: [{ window: 0, from: day0, to: day0 + HOURS / 24, sign: 1 }] }], groupBy: [], filters: {} };
      assert.equal(reader.query(tenant, daily).measures[REQUESTS]![0], BigInt(HOURS * PER_HOUR));
      assert.equal(checks, HOURS / 24);
    } finally {
      db.close();
    }
  });

  it('a reader thread told to stop a read answers it as abandoned, and reads on', async () => {
    const stop = new SharedArrayBuffer(4);
    const data: ReaderThreadData = { path, busyTimeoutMs: 5000, stop };
    const worker = new Worker(new URL('../../src/store/sqlite/reader-worker.js', import.meta.url), { workerData: data });
    try {
      const ask = async (request: ReadRequest): Promise<ReadResponse> => {
        worker.postMessage(request);
        const [response] = (await once(worker, 'message')) as [ReadResponse];
        return response;
      };
      const request = (id: number): ReadRequest => ({ id, name: 'usage.query', args: { tenantId: tenant, query: WHOLE }, deadline: Date.now() + 600_000, budgetMs: 600_000 });
      Atomics.store(new Int32Array(stop), 0, 7);
      const stopped = await ask(request(7));
      assert.equal(stopped.ok, false);
      assert.equal(!stopped.ok && stopped.error.kind, 'aborted');
      // The flag names read 7 only: the next read runs whole.
      const next = await ask(request(8));
      assert.equal(next.ok, true, next.ok ? undefined : next.error.message);
    } finally {
      await worker.terminate();
    }
  });

  it('a usage read past its budget is stopped by its own statement: rejected before the thread would be replaced', async () => {
    const pool = new ReaderPool({ path, busyTimeoutMs: 5000 }, 1);
    try {
      const whole = await pool.run('usage.query', { tenantId: tenant, query: WHOLE }, tenant, 600_000);
      assert.equal(whole.length, HOURS * PER_HOUR);
      // Before, the statement ran to its end: its answer was given, or, past the grace, its thread
      // was replaced. Now it stops at a piece: long before the grace (a piece is a 60th of the read).
      const started = performance.now();
      await assert.rejects(pool.run('usage.query', { tenantId: tenant, query: WHOLE }, tenant, 1), (err: unknown) => {
        assert.ok(err instanceof ReadTimeoutError);
        assert.match(err.message, /budget of 1 ms/);
        return true;
      });
      const took = performance.now() - started;
      assert.ok(took < STOP_GRACE_MS, `rejected after ${took.toFixed(0)} ms`);
    } finally {
      await pool.close();
    }
  });
});
