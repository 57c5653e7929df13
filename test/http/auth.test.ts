/** Keys and tenants over real HTTP: 401s, revocation, and no crossing between tenants on any endpoint. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { minimalWireEvent } from '../support/events.js';
import { createKey, request, runCli, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';

for (const backend of BACKENDS) {
  describe(`keys and tenants (${backend.name})`, { skip: backend.skip }, () => {
    let server: ServerProcess;
    let storeArgs: string[];
    let keyA: string;
    let keyB: string;

    before(async () => {
      storeArgs = await backend.fresh();
      server = await startServer({ args: [...storeArgs, '--key-cache-seconds', '1'] });
      keyA = await createKey('tenant-a', storeArgs);
      keyB = await createKey('tenant-b', storeArgs);
    });
    after(() => server.stop());

    describe('authentication', () => {
      it('GET /ping: "PONG" with a valid key', async () => {
        const reply = await request(`${server.url}/ping`, { key: keyA });
        assert.equal(reply.status, 200);
        assert.equal(reply.text, '"PONG"');
        assert.equal(reply.json, 'PONG');
      });

      it('401 problem+json without a key or with a wrong one, on every keyed endpoint', async () => {
        const endpoints: [string, string][] = [
          ['GET', '/ping'],
          ['POST', '/storage'],
          ['POST', '/s3'],
          ['POST', '/storage/batch'],
          ['POST', '/s3/batch'],
          ['GET', '/storage/recommendedBatchSize'],
          ['GET', '/s3/recommendedBatchSize'],
          ['GET', '/v1/events'],
        ];
        for (const [method, path] of endpoints) {
          for (const [key, code] of [[undefined, 'BM_ERR_AUTH_MISSING_KEY'], ['bmk_wrong', 'BM_ERR_AUTH_INVALID_KEY']] as const) {
            const reply = await request(`${server.url}${path}`, { method, ...(key ? { key } : {}), ...(method === 'POST' ? { body: minimalWireEvent('ListBuckets') } : {}) });
            assert.equal(reply.status, 401, `${method} ${path}`);
            assert.equal(reply.json.code, code);
            assert.match(reply.headers.get('content-type') ?? '', /problem\+json/);
          }
        }
      });

      it('a revoked key stops working within the key cache time', async () => {
        const key = await createKey('tenant-revoke', storeArgs);
        assert.equal((await request(`${server.url}/ping`, { key })).status, 200);
        const list = await runCli(['keys', 'list', ...storeArgs]);
        const id = list.stdout.split('\n').find((l) => l.includes('tenant-revoke'))!.split(/\s+/)[0]!;
        const revoked = await runCli(['keys', 'revoke', id, ...storeArgs]);
        assert.equal(revoked.code, 0, revoked.stderr);
        await sleep(1100);
        assert.equal((await request(`${server.url}/ping`, { key })).status, 401);
      });
    });

    describe('tenants', () => {
      it("a key of tenant A neither reads nor dedups against tenant B's events", async () => {
        const eventA = { ...(minimalWireEvent('GetObject') as object), customerId: 'cust-shared', eventId: 'same-id' };
        const eventB = { ...(minimalWireEvent('PutObject') as object), customerId: 'cust-shared', eventId: 'same-id' };
        assert.equal((await request(`${server.url}/s3`, { key: keyA, body: eventA })).json.duplicate, false);
        // Same eventId in another tenant is another event.
        assert.equal((await request(`${server.url}/s3`, { key: keyB, body: eventB })).json.duplicate, false);
        await request(`${server.url}/s3/batch`, { key: keyB, body: [{ ...eventB, eventId: 'b-only' }] });

        for (const query of ['', '?customerId=cust-shared', '?action=GetObject', '?action=PutObject', '?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z']) {
          const pageA = await request(`${server.url}/v1/events${query}`, { key: keyA });
          const pageB = await request(`${server.url}/v1/events${query}`, { key: keyB });
          // Each sees exactly what it stored that the query matches: its own, and nothing else.
          const mineA = query.includes('PutObject') ? [] : ['same-id'];
          const mineB = query.includes('GetObject') ? [] : ['b-only', 'same-id'];
          assert.deepEqual(pageA.json.events.map((e: { eventId: string }) => e.eventId), mineA, `A sees only its own (${query})`);
          assert.deepEqual(pageB.json.events.map((e: { eventId: string }) => e.eventId), mineB, `B sees only its own (${query})`);
          assert.ok(pageA.json.events.every((e: { action: string }) => e.action === 'GetObject'));
          assert.ok(pageB.json.events.every((e: { action: string }) => e.action === 'PutObject'));
        }
      });

      it("a cursor from tenant B's page does not reveal B's events to A", async () => {
        for (let i = 0; i < 3; i++) await request(`${server.url}/s3`, { key: keyB, body: minimalWireEvent('ListBuckets') });
        const pageB = await request(`${server.url}/v1/events?limit=1`, { key: keyB });
        assert.ok(pageB.json.nextCursor);
        const reply = await request(`${server.url}/v1/events?cursor=${encodeURIComponent(pageB.json.nextCursor)}`, { key: keyA });
        // Either refused, or a page of A's own events (A stored one, 'same-id'), never one of B's.
        if (reply.status === 200) for (const e of reply.json.events as { eventId: string }[]) assert.equal(e.eventId, 'same-id');
        else assert.equal(reply.status, 400);
      });
    });
  });
}

after(dropFreshStores);
