/** Health, recommended batch size, 404s and /v1/events query handling. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { minimalWireEvent } from '../support/events.js';
import { request, runCli, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';

for (const backend of BACKENDS) {
  describe(`status and /v1/events (${backend.name})`, { skip: backend.skip }, () => {
    let storeArgs: string[];
    let server: ServerProcess;
    let key: string;

    before(async () => {
      storeArgs = await backend.fresh();
      server = await startServer({ args: storeArgs });
      key = server.bootstrapKey!;
    });
    after(() => server.stop());

    describe('status endpoints', () => {
      it('GET /healthz answers 200 without a key', async () => {
        const reply = await request(`${server.url}/healthz`);
        assert.equal(reply.status, 200);
        assert.deepEqual(reply.json, { status: 'ok', store: backend.name });
      });

      it('recommendedBatchSize is a bare integer on both paths', async () => {
        for (const path of ['/storage/recommendedBatchSize', '/s3/recommendedBatchSize']) {
          const reply = await request(`${server.url}${path}`, { key });
          assert.equal(reply.status, 200);
          assert.equal(reply.text, '500');
          assert.equal(Number.parseInt(reply.text, 10), 500);
        }
      });

      it('unknown paths are 404 problem+json, with or without a key', async () => {
        for (const k of [key, undefined]) {
          const reply = await request(`${server.url}/nope`, k ? { key: k } : {});
          assert.equal(reply.status, 404);
          assert.equal(reply.json.code, 'BM_ERR_NOT_FOUND');
        }
      });
    });

    describe('GET /v1/events', () => {
      before(async () => {
        const events = [
          { ...(minimalWireEvent('GetObject') as object), timestamp: '2024-01-01T00:00:00Z', customerId: 'c1', eventId: 'q-1' },
          { ...(minimalWireEvent('GetObject') as object), timestamp: '2024-02-01T00:00:00Z', customerId: 'c2', eventId: 'q-2' },
          { ...(minimalWireEvent('PutObject') as object), timestamp: '2024-03-01T00:00:00Z', customerId: 'c1', eventId: 'q-3' },
        ];
        for (const e of events) assert.equal((await request(`${server.url}/s3`, { key, body: e })).status, 200);
      });

      const ids = async (query: string) => (await request(`${server.url}/v1/events${query}`, { key })).json.events.map((e: { eventId: string }) => e.eventId);

      it('lists newest first and filters by action, customer and time', async () => {
        assert.deepEqual(await ids(''), ['q-3', 'q-2', 'q-1']);
        assert.deepEqual(await ids('?action=GetObject'), ['q-2', 'q-1']);
        assert.deepEqual(await ids('?customerId=c1'), ['q-3', 'q-1']);
        assert.deepEqual(await ids('?from=2024-02-01T00:00:00Z'), ['q-3', 'q-2']);
        assert.deepEqual(await ids('?to=2024-02-01T00:00:00Z'), ['q-1']);
        assert.deepEqual(await ids('?customerId=nobody'), []);
      });

      it('pages with a cursor without loss or repetition', async () => {
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const reply = await request(`${server.url}/v1/events?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key });
          seen.push(...reply.json.events.map((e: { eventId: string }) => e.eventId));
          cursor = reply.json.nextCursor;
        } while (cursor);
        assert.deepEqual(seen, ['q-3', 'q-2', 'q-1']);
      });

      it('refuses bad query parameters with 400 naming them', async () => {
        for (const [query, path] of [['?limit=0', '/limit'], ['?limit=1001', '/limit'], ['?action=Nope', '/action'], ['?from=yesterday', '/from'], ['?cursor=not%20a%20cursor', '/cursor']]) {
          const reply = await request(`${server.url}/v1/events${query}`, { key });
          assert.equal(reply.status, 400, query);
          assert.equal(reply.json.errors[0].path, path, query);
        }
      });

      it('refuses unknown, misspelt and repeated query parameters with 400 naming them, not ignoring them', async () => {
        const cases: [string, { path: string; message: string; expected: string; received: string }][] = [
          ['?customerid=c1', { path: '/customerid', message: 'unknown query parameter "customerid"', expected: 'only action, customerId, from, to, limit, cursor', received: '"customerid"' }],
          ['?customerId[]=c1', { path: '/customerId[]', message: 'unknown query parameter "customerId[]"', expected: 'only action, customerId, from, to, limit, cursor', received: '"customerId[]"' }],
          ['?customerId=c1&customerId=c2', { path: '/customerId', message: 'customerId must be given once, as text', expected: 'one string', received: '2 values' }],
          [`?cursor=${'a'.repeat(1025)}`, { path: '/cursor', message: 'cursor must be at most 1024 characters', expected: 'at most 1024 characters', received: '1025 characters' }],
        ];
        for (const [query, error] of cases) {
          const reply = await request(`${server.url}/v1/events${query}`, { key });
          assert.equal(reply.status, 400, query);
          assert.match(reply.headers.get('content-type') ?? '', /^application\/problem\+json/, query);
          assert.equal(reply.json.code, 'BM_ERR_QUERY_INVALID', query);
          assert.deepEqual(reply.json.errors, [error], query);
        }
        // Two unknown names: both named.
        const two = await request(`${server.url}/v1/events?limt=5&sort=asc`, { key });
        assert.deepEqual(two.json.errors.map((e: { path: string }) => e.path), ['/limt', '/sort']);
      });

      it('refuses query parameters on routes that take none, ingestion included', async () => {
        const body = minimalWireEvent('GetObject');
        const replies = [
          await request(`${server.url}/ping?verbose=1`, { key }),
          await request(`${server.url}/healthz?x=1`),
          await request(`${server.url}/s3/recommendedBatchSize?size=9`, { key }),
          await request(`${server.url}/s3?customerId=c9`, { key, body }),
          await request(`${server.url}/s3/batch?dryRun=true`, { key, body: [body] }),
        ];
        for (const reply of replies) {
          assert.equal(reply.status, 400);
          assert.equal(reply.json.code, 'BM_ERR_QUERY_INVALID');
          assert.equal(reply.json.errors[0].expected, 'no query parameters');
        }
        assert.deepEqual(await ids('?customerId=c9'), [], 'the refused single event was not stored');
        // Refused bodies are kept, like every refused input.
        const exported = await runCli(['quarantine', 'export', ...storeArgs]);
        const kept = exported.stdout.trim().split('\n').map((line) => JSON.parse(line) as { code: string; source: string; body: string });
        assert.deepEqual(
          kept.filter((e) => e.code === 'BM_ERR_QUERY_INVALID').map((e) => [e.source, JSON.parse(e.body)]),
          [['POST /s3', body], ['POST /s3/batch', [body]]],
        );
      });
    });
  });
}

after(dropFreshStores);
