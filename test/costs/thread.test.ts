/**
 * A cost request is priced on the cost thread (src/costs/thread.ts), not on the event loop: while
 * one cold request prices a month of 5,000 attribution keys (seconds of work), usage and ingest
 * requests sent one after another are all answered before it (priced on the event loop, as before
 * the thread, the cost reply came after 8 of the 25 pairs on SQLite and 9 on PostgreSQL). Also: a
 * coded error thrown on the thread is the same problem+json reply, the server stops cleanly with
 * the thread started (both stores), the thread is started by the first request (not with the
 * server), and a thread that exits fails its request and is started again by the next.
 */
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { setTimeout } from 'node:timers/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { CostThread } from '../../src/costs/thread.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { parseUsageParams } from '../../src/usage/params.js';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { createKey, request, startServer, tempDir } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';
import { iso, send } from '../support/workload.js';

const MONTH = Date.parse('2026-09-01T00:00:00Z') / 1000;
const KEYS = 5000;
/** Answered one after the other while the cost request runs. */
const OTHERS = 25;

/** Each event its own customer, so its own quantities: requests in its hour, its stored bytes for the rest of the month. */
const events = Array.from({ length: KEYS }, (_, i) => ({
  action: 'PutObject',
  provider: 'aws',
  bucket: 'media',
  objectKey: `o${i}`,
  bytes: 1000 + i,
  customerId: `c${i}`,
  timestamp: iso(MONTH + (i % (28 * 24)) * 3600 + 60),
  eventId: `e${i}`,
}));

after(dropFreshStores);

for (const backend of BACKENDS) {
  describe(`cost thread (${backend.name})`, { skip: backend.skip }, () => {
    let server: ServerProcess;
    let key: string;

    before(async () => {
      const store = await backend.fresh();
      key = await createKey('acme', store);
      server = await startServer({ args: store });
      await send(server.url, key, events, 1000);
      // Folded and applied now (a read catches up first), so that the cost request's time is its reads and its pricing.
      const caughtUp = await request(`${server.url}/v1/usage?from=${iso(MONTH)}&to=${iso(MONTH + 30 * 86400)}&granularity=none&storage=true`, { key });
      assert.equal(caughtUp.status, 200, caughtUp.text);
    });

    after(async () => {
      assert.equal(await server?.stop(30_000), 0, 'the server exits 0 on SIGTERM, its cost thread stopped');
    });

    it('answers usage and ingest requests while a cold month is priced', async () => {
      const order: string[] = [];
      const cost = request(`${server.url}/v1/costs?from=${iso(MONTH)}&to=${iso(MONTH + 30 * 86400)}&granularity=day&groupBy=customerId`, { key }).then((reply) => {
        order.push('cost');
        return reply;
      });
      for (let i = 0; i < OTHERS; i++) {
        const usage = await request(`${server.url}/v1/usage?from=${iso(MONTH)}&to=${iso(MONTH + 30 * 86400)}&granularity=none`, { key });
        assert.equal(usage.status, 200, usage.text);
        order.push('usage');
        // In October: not a quantity of the month being priced.
        const event = { action: 'GetObject', provider: 'aws', bucket: 'media', objectKey: 'o0', bytes: 10, customerId: 'late', timestamp: iso(MONTH + 31 * 86400 + i), eventId: `during-${i}` };
        const ingest = await request(`${server.url}/storage/batch`, { key, body: [event] });
        assert.equal(ingest.status, 200, ingest.text);
        order.push('ingest');
      }
      const reply = await cost;
      assert.equal(reply.status, 200, reply.text);
      assert.equal(new Set(reply.json.rows.map((r: { customerId: string | null }) => r.customerId).filter((c: string | null) => c !== null)).size, KEYS);
      assert.deepEqual(order, [...Array.from({ length: OTHERS }, () => ['usage', 'ingest']).flat(), 'cost']);
    });

    it('answers a coded error of the cost thread as before (a cursor not made for the query)', async () => {
      const reply = await request(`${server.url}/v1/costs?from=${iso(MONTH)}&to=${iso(MONTH + 86400)}&cursor=bm90LWEtY3Vyc29y`, { key });
      assert.equal(reply.status, 400, reply.text);
      assert.equal(reply.json.code, 'BM_ERR_QUERY_INVALID');
      assert.match(reply.json.detail, /cursor was not made for this query/);
    });
  });
}

describe('cost thread started by the first request', () => {
  it('is not started with the server: a node that only ingests does not pay its memory', async () => {
    const dir = tempDir();
    const started = join(dir, 'started');
    const script = join(dir, 'worker.mjs');
    const real = new URL('../../src/costs/worker.js', import.meta.url).href;
    writeFileSync(script, `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(started)}, '');\nawait import(${JSON.stringify(real)});\n`);
    const store = await openSqliteStore({ path: join(dir, 'cost.db') });
    const costs = new CostThread(store.threadReads, { prices: undefined, bucketPlans: undefined }, pathToFileURL(script));
    try {
      // A thread would have run its first line by now (it starts in milliseconds; given 500).
      await setTimeout(500);
      assert.equal(existsSync(started), false, 'no thread before a request');
      const query = parseUsageParams({ from: '2026-09-01T00:00:00Z', to: '2026-09-02T00:00:00Z' }, undefined, ['json', 'csv', 'focus']);
      assert.deepEqual(JSON.parse((await costs.page(1, query)).text).rows, []);
      assert.equal(existsSync(started), true, 'started by the request');
    } finally {
      await costs.close();
      await store.close();
    }
  });
});

/**
 * A cost thread whose first instance runs `first` at its first message (a statement); the next
 * runs the real one. Returns it with its store, closed by `close`.
 */
async function failingOnce(first: string, costHeapMb?: number) {
  const dir = tempDir();
  const flag = join(dir, 'once');
  writeFileSync(flag, '');
  const script = join(dir, 'worker.mjs');
  const real = new URL('../../src/costs/worker.js', import.meta.url).href;
  writeFileSync(
    script,
    `import { existsSync, unlinkSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
if (existsSync(${JSON.stringify(flag)})) {
  unlinkSync(${JSON.stringify(flag)});
  parentPort.once('message', () => { ${first} });
} else {
  await import(${JSON.stringify(real)});
}
`,
  );
  const store = await openSqliteStore({ path: join(dir, 'cost.db') });
  const costs = new CostThread(store.threadReads, { prices: undefined, bucketPlans: undefined, ...(costHeapMb === undefined ? {} : { costHeapMb }) }, pathToFileURL(script));
  const close = async () => {
    await costs.close();
    await store.close();
  };
  return { costs, close };
}

const dayQuery = () => parseUsageParams({ from: '2026-09-01T00:00:00Z', to: '2026-09-02T00:00:00Z' }, undefined, ['json', 'csv', 'focus']);

describe('cost thread that exits', () => {
  it('fails the request it had, and the next request starts another thread', async () => {
    const { costs, close } = await failingOnce('process.exit(1);');
    try {
      const query = dayQuery();
      await assert.rejects(costs.page(1, query), /the cost thread exited/);
      const page = await costs.page(1, query);
      assert.deepEqual(JSON.parse(page.text).rows, []);
      assert.equal(page.nextCursor, null);
    } finally {
      await close();
    }
  });
});

describe('cost thread out of its heap', () => {
  it('answers the request it had with a coded 503 and Retry-After (not an internal error, nor the bound\'s 422), and the next request starts another thread', async () => {
    // The first thread fills its heap of 64 MB.
    const { costs, close } = await failingOnce('const held = []; for (;;) held.push(Array.from({ length: 1e5 }, (_, i) => ({ i })));', 64);
    try {
      const query = dayQuery();
      await assert.rejects(costs.page(1, query), (err: { code?: string; status?: number; message: string; extra?: { retryAfter?: number } }) => {
        assert.equal(err.code, 'BM_ERR_COST_OUT_OF_MEMORY', err.message);
        assert.equal(err.status, 503);
        assert.equal(err.extra?.retryAfter, 10);
        assert.match(err.message, /64 MB heap/);
        return true;
      });
      const page = await costs.page(1, query);
      assert.deepEqual(JSON.parse(page.text).rows, []);
    } finally {
      await close();
    }
  });
});
