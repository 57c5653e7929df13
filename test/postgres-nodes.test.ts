/**
 * Many stateless nodes on one PostgreSQL database, as real processes: exactly-once across nodes,
 * a database connection cut mid-load, `serve --workers`, and every CLI command against PostgreSQL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { minimalWireEvent } from './support/events.js';
import { allStoredIds, runLoad } from './support/load.js';
import { createKey, request, runCli, startServer } from './support/server.js';
import type { ServerProcess } from './support/server.js';
import { dropScratchDatabases, scratchDatabase } from './support/scratch.js';
import { startTcpProxy, viaProxy } from './support/tcp-proxy.js';

const BASE_URL = process.env.TEST_DATABASE_URL;
const SKIP = BASE_URL ? false : 'TEST_DATABASE_URL is not set: PostgreSQL multi-node tests SKIPPED';

describe('PostgreSQL: several nodes', { skip: SKIP }, () => {
  let databaseUrl: string;

  before(async () => {
    databaseUrl = (await scratchDatabase()).url;
  });
  after(dropScratchDatabases);

  const pgArgs = () => ['--database-url', databaseUrl];

  it('two serve processes receiving the same events concurrently store each exactly once', async () => {
    const key = await createKey('nodes', pgArgs());
    const [a, b] = await Promise.all([startServer({ args: pgArgs() }), startServer({ args: pgArgs() })]);
    try {
      const events = Array.from({ length: 600 }, (_, i) => ({ ...(minimalWireEvent('GetObject') as object), eventId: `twice-${i}`, objectKey: `k/${i}` }));
      const send = async (server: ServerProcess, order: number[]) => {
        let fresh = 0;
        for (let at = 0; at < order.length; at += 8) {
          const slice = order.slice(at, at + 8);
          const replies = await Promise.all(slice.map((i) => request(`${server.url}/s3`, { key, body: events[i] })));
          for (const reply of replies) {
            assert.equal(reply.status, 200, reply.text);
            if (!reply.json.duplicate) fresh++;
          }
        }
        return fresh;
      };
      const forward = events.map((_, i) => i);
      const batches = async (server: ServerProcess) => {
        let fresh = 0;
        for (let at = 0; at < events.length; at += 100) {
          const reply = await request(`${server.url}/s3/batch`, { key, body: events.slice(at, at + 100) });
          assert.equal(reply.status, 200, reply.text);
          fresh += reply.json.accepted;
        }
        return fresh;
      };
      const counts = await Promise.all([send(a, forward), send(b, [...forward].reverse()), batches(a), batches(b)]);
      assert.equal(counts.reduce((x, y) => x + y, 0), events.length, 'each event reported stored exactly once in all');
      const stored = await allStoredIds(a.url, key);
      assert.equal(stored.length, events.length);
      assert.equal(new Set(stored).size, events.length);
      assert.deepEqual(await allStoredIds(b.url, key), stored, 'both nodes see the same events');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('a cut database connection mid-load: 503 + Retry-After, no false acknowledgement, recovery by itself', async () => {
    const key = await createKey('outage', pgArgs());
    const proxy = await startTcpProxy(new URL(databaseUrl).hostname, Number(new URL(databaseUrl).port || 5432));
    const server = await startServer({ args: ['--database-url', viaProxy(databaseUrl, proxy)] });
    try {
      let stop!: () => void;
      const until = new Promise<void>((resolve) => (stop = resolve));
      const loading = runLoad({ url: server.url, key, connections: 16, batchEvery: 4, batchSize: 25, prefix: 'cut', until });
      await sleep(700);
      proxy.cut();
      await sleep(300);
      const during = await request(`${server.url}/s3`, { key, body: { ...(minimalWireEvent('ListBuckets') as object), eventId: 'during-cut' } });
      assert.equal(during.status, 503, during.text);
      assert.equal(during.json.code, 'BM_ERR_STORE_UNAVAILABLE');
      assert.ok(Number(during.headers.get('retry-after')) >= 1);
      assert.equal((await request(`${server.url}/healthz`)).status, 503);
      await sleep(1200);
      proxy.restore();
      const deadline = Date.now() + 15_000;
      while ((await request(`${server.url}/healthz`)).status !== 200) {
        assert.ok(Date.now() < deadline, 'healthz back to 200 within 15 s of the database returning');
        await sleep(200);
      }
      await sleep(500);
      stop();
      const load = await loading;
      assert.ok(load.statuses.get(503)! > 0, `some requests were refused during the cut: ${JSON.stringify([...load.statuses])}`);
      assert.equal([...load.statuses.keys()].filter((s) => s !== 200 && s !== 503).length, 0, `only 200 and 503: ${JSON.stringify([...load.statuses])}`);
      const after = await request(`${server.url}/s3`, { key, body: minimalWireEvent('ListBuckets') });
      assert.equal(after.status, 200, 'writes work again');

      const stored = new Set(await allStoredIds(server.url, key));
      const lost = [...load.acknowledged].filter((id) => !stored.has(id));
      assert.deepEqual(lost, [], 'every acknowledged event is stored');
      assert.ok(!stored.has('during-cut'), 'the refused event was not stored');
      for (const id of stored) if (id.startsWith('cut-')) assert.ok(load.sent.has(id));
    } finally {
      await server.stop();
      await proxy.close();
    }
  });

  it('reads while the database is cut: 503 BM_ERR_STORE_UNAVAILABLE with Retry-After on every read path, not a 500', async () => {
    const key = await createKey('reads-cut', pgArgs());
    const proxy = await startTcpProxy(new URL(databaseUrl).hostname, Number(new URL(databaseUrl).port || 5432));
    const server = await startServer({ args: ['--database-url', viaProxy(databaseUrl, proxy)] });
    try {
      const range = 'from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z';
      // The cost thread's reads (its own connections) included: its error crosses to the main thread coded.
      const paths = ['/v1/events', `/v1/usage?${range}`, `/v1/usage/reconcile?${range}`, `/v1/costs?${range}`, '/v1/quarantine', '/v1/objects?bucket=b'];
      // The key is checked (and kept) while the database answers.
      for (const path of paths) assert.equal((await request(`${server.url}${path}`, { key })).status, 200, path);
      proxy.cut();
      for (const path of paths) {
        const reply = await request(`${server.url}${path}`, { key });
        assert.equal(reply.status, 503, `${path}: ${reply.text}`);
        assert.match(reply.headers.get('content-type')!, /^application\/problem\+json/);
        assert.equal(reply.json.code, 'BM_ERR_STORE_UNAVAILABLE', path);
        assert.equal(reply.headers.get('retry-after'), '1', path);
      }
      // /healthz needs no key: its detail says what failed in our words; the driver's message (which
      // may name the host, port or user) goes to the server's log only.
      const health = await request(`${server.url}/healthz`);
      assert.equal(health.status, 503);
      assert.match(health.json.detail, /^The postgres store cannot take writes: (its probe write failed \(the cause is in the server log\)|no answer within \d+ ms)$/);
      assert.ok(!health.text.includes(String(proxy.port)), health.text);
      const deadline = Date.now() + 5000;
      while (!server.output().includes('health check failed') && Date.now() < deadline) await sleep(50);
      assert.match(server.output(), /"msg":"health check failed/);
    } finally {
      proxy.restore();
      await server.stop();
      await proxy.close();
    }
  });

  it('serve --workers 2 serves from two processes on one database', async () => {
    const key = await createKey('workers', pgArgs());
    const server = await startServer({ args: [...pgArgs(), '--workers', '2'] });
    try {
      const listening = () => new Set([...server.output().matchAll(/"pid":(\d+)[^\n]*"msg":"bucketmeter listening"/g)].map((m) => Number(m[1])));
      const deadline = Date.now() + 15_000;
      while (listening().size < 2 && Date.now() < deadline) await sleep(100);
      assert.equal(listening().size, 2, 'two workers listening');
      const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => request(`${server.url}/s3`, { key, body: { ...(minimalWireEvent('HeadBucket') as object), eventId: `w-${i}` } })));
      for (const reply of replies) assert.equal(reply.status, 200);
      assert.equal((await allStoredIds(server.url, key)).length, 40);
      assert.equal(await server.stop(), 0);
    } finally {
      await server.stop().catch(() => undefined);
    }
  });

  it('keys and quarantine commands work against PostgreSQL', async () => {
    const key = await createKey('cli-pg', pgArgs());
    const list = await runCli(['keys', 'list', ...pgArgs()]);
    assert.match(list.stdout, /cli-pg/);
    const server = await startServer({ args: pgArgs() });
    try {
      assert.equal((await request(`${server.url}/s3`, { key, body: { action: 'Unknown', timestamp: '2024-05-01T12:00:00Z', provider: 'aws' } })).status, 400);
    } finally {
      await server.stop();
    }
    const exported = await runCli(['quarantine', 'export', '--tenant', 'cli-pg', ...pgArgs()]);
    assert.equal(exported.code, 0, exported.stderr);
    const entries = exported.stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(entries.length, 1);
    assert.equal(JSON.parse(entries[0].body).action, 'Unknown');
    const id = list.stdout.split('\n').find((l) => l.includes('cli-pg'))!.split(/\s+/)[0]!;
    assert.equal((await runCli(['keys', 'revoke', id, ...pgArgs()])).code, 0);
  });
});
