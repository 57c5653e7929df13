/**
 * Usage on PostgreSQL with several writers: two serve processes (one with --workers 2) receive the
 * same events at once, by single requests, small batches (one statement) and large ones (COPY), all
 * on the same hot rollup and receipt rows. The rollups are folded after commit: the background
 * catch-up is held back, so the folds are those of reads, sent to all three processes during the load
 * and all at once after it (each folds what it finds pending, one at a time). Nothing is lost or
 * counted twice, no request fails (no deadlock), every read sees what was stored before it, and
 * receipts add up.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { createKey, request, runCli, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';

const postgres = BACKENDS.find((b) => b.name === 'postgres')!;
const N = 3000;

describe('usage: concurrent writers on PostgreSQL', { skip: postgres.skip }, () => {
  let storeArgs: string[];
  let servers: ServerProcess[];

  before(async () => {
    storeArgs = await postgres.fresh();
    const env = { BUCKETMETER_TEST_CATCH_UP_DELAY_MS: '600000' };
    servers = await Promise.all([startServer({ args: storeArgs, env }), startServer({ args: [...storeArgs, '--workers', '2'], env })]);
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await dropFreshStores();
  });

  it('counts every event once whichever node and path stored it', async () => {
    const key = await createKey('hot', storeArgs);
    // Two customers, two hours, one bucket: every unit updates the same few rollup rows.
    const events = Array.from({ length: N }, (_, i) => ({
      action: i % 4 === 0 ? 'PutObject' : 'GetObject',
      timestamp: i % 2 === 0 ? '2026-03-01T10:10:00Z' : '2026-03-01T11:10:00Z',
      provider: 'aws',
      bucket: 'hot',
      objectKey: 'k',
      bytes: i,
      customerId: `c${i % 2}`,
      clientId: `d${i % 3}`,
      eventId: `hot-${i}`,
    }));
    const sizes = [1, 7, 40, 600];
    const sendAll = async (server: ServerProcess, offset: number) => {
      const parts: (typeof events)[] = [];
      for (let at = 0, s = offset; at < N; s++) {
        const size = sizes[s % sizes.length]!;
        parts.push(events.slice(at, at + size));
        at += size;
      }
      // Eight requests in flight per server.
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < parts.length) {
            const part = parts[next++]!;
            const reply = part.length === 1 ? await request(`${server.url}/s3`, { key, body: part[0] }) : await request(`${server.url}/s3/batch`, { key, body: part });
            assert.equal(reply.status, 200, reply.text);
          }
        }),
      );
    };
    const total = (field: string, rows: Record<string, number>[]) => rows.reduce((sum, r) => sum + r[field]!, 0);
    const requests = async (server: ServerProcess) => {
      const reply = await request(`${server.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z&groupBy=customerId`, { key });
      assert.equal(reply.status, 200, reply.text);
      return total('requests', reply.json.rows);
    };
    // Reads during the load: each folds what is pending, racing the others' folds and the commits.
    let sending = true;
    const readsDuringLoad = Promise.all(
      [0, 1, 1].map(async (s) => {
        let last = 0;
        while (sending) {
          const n = await requests(servers[s]!);
          assert.ok(n >= last && n <= N, `a read saw ${n} after ${last}`);
          last = n;
        }
      }),
    );
    await Promise.all([sendAll(servers[0]!, 0), sendAll(servers[1]!, 2), sendAll(servers[0]!, 1), sendAll(servers[1]!, 3)]);
    sending = false;
    await readsDuringLoad;
    // Reads at once on every process, after the last 2xx: each sees every event, once.
    assert.deepEqual(await Promise.all([0, 1, 0, 1, 1, 0].map((s) => requests(servers[s]!))), Array(6).fill(N));

    const reply = await request(`${servers[0]!.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z&granularity=hour&groupBy=customerId,clientId`, { key });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(total('requests', reply.json.rows), N);
    const read = events.filter((e) => e.action === 'GetObject').reduce((sum, e) => sum + e.bytes, 0);
    const written = events.filter((e) => e.action === 'PutObject').reduce((sum, e) => sum + e.bytes, 0);
    assert.equal(total('readBytes', reply.json.rows), read);
    assert.equal(total('writtenBytes', reply.json.rows), written);
    for (const groupBy of ['', 'customerId', 'action']) {
      const coarse = await request(`${servers[1]!.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z&groupBy=${groupBy}`, { key });
      assert.equal(total('requests', coarse.json.rows), N, `groupBy=${groupBy}`);
    }
    const today = new Date().toISOString().slice(0, 10);
    const reconcile = await request(`${servers[0]!.url}/v1/usage/reconcile?from=2026-03-01T00:00:00Z&to=${today}T00:00:00Z`, { key });
    assert.deepEqual(reconcile.json.differences, []);
    const verify = await runCli(['usage', 'verify', '--tenant', 'hot', '--from', '2026-03-01T00:00:00Z', '--to', new Date(Date.now() + 86_400_000).toISOString().slice(0, 10) + 'T00:00:00Z', ...storeArgs]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    const receipts = await request(`${servers[0]!.url}/v1/usage/reconcile?from=${today}T00:00:00Z&to=${new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)}T00:00:00Z`, { key });
    const day = receipts.json.days[0];
    assert.deepEqual([day.received, day.stored, day.duplicates, day.rejected], [4 * N, N, 3 * N, 0]);
  });
});
