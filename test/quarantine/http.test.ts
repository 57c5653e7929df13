/**
 * GET /v1/quarantine and /v1/quarantine/{id} on both stores: a tenant sees its own entries only,
 * newest first and paged without gaps or repeats, each with its errors and its body as kept (text, or
 * base64 when it is not UTF-8); another tenant's id is answered like a missing one; ingest keys are refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { createKey, request, runCli, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';

const bad = (n: number) => ({ action: 'GetObject', timestamp: 'not a time', provider: 'aws', bucket: 'b', objectKey: `k${n}`, bytes: 1, eventId: `q-${n}` });

for (const backend of BACKENDS) {
  describe(`quarantine API (${backend.name})`, { skip: backend.skip }, () => {
    let server: ServerProcess;
    let storeArgs: string[];
    let keyA: string;
    let keyB: string;

    before(async () => {
      storeArgs = await backend.fresh();
      keyA = await createKey('qa', storeArgs);
      keyB = await createKey('qb', storeArgs);
      server = await startServer({ args: storeArgs });
      // Interleaved, so that a page of A's would show B's entries if the tenant were not applied.
      for (let n = 0; n < 5; n++) {
        assert.equal((await request(`${server.url}/s3`, { key: keyA, body: bad(n) })).status, 400);
        assert.equal((await request(`${server.url}/s3`, { key: keyB, body: bad(100 + n) })).status, 400);
      }
      const binary = await request(`${server.url}/s3`, { key: keyA, raw: Buffer.from([0xff, 0xfe, 0x00, 0x7b]), headers: { 'content-type': 'application/json' } });
      assert.equal(binary.status, 400);
    });
    after(async () => {
      await server.stop();
      await dropFreshStores();
    });

    it("lists the tenant's own entries newest first, paged by nextCursor", async () => {
      const seen: number[] = [];
      const bodies: number[] = [];
      let cursor: string | null = null;
      do {
        const page = await request(`${server.url}/v1/quarantine?limit=4${cursor === null ? '' : `&cursor=${cursor}`}`, { key: keyA });
        assert.equal(page.status, 200, page.text);
        for (const e of page.json.entries) {
          seen.push(e.id);
          bodies.push(e.bodyBytes);
          assert.equal(e.source, 'POST /s3');
          assert.ok(e.errors.length > 0);
          assert.match(e.receivedAt, /^\d{4}-\d\d-\d\dT/);
        }
        cursor = page.json.nextCursor;
      } while (cursor !== null);
      assert.equal(seen.length, 6);
      assert.deepEqual(seen, [...seen].sort((a, b) => b - a));
      assert.equal(bodies[0], 4);
      const ofB = await request(`${server.url}/v1/quarantine?limit=500`, { key: keyB });
      assert.equal(ofB.json.entries.length, 5);
      for (const e of ofB.json.entries) assert.ok(!seen.includes(e.id));
    });

    it('shows an entry with its errors and body, and answers 404 for another tenant\'s id', async () => {
      const [binary, text] = (await request(`${server.url}/v1/quarantine?limit=2`, { key: keyA })).json.entries;
      const shown = await request(`${server.url}/v1/quarantine/${text.id}`, { key: keyA });
      assert.equal(shown.status, 200, shown.text);
      assert.deepEqual(JSON.parse(shown.json.body.text), bad(4));
      assert.equal(shown.json.body.encoding, 'utf8');
      assert.equal(shown.json.errors[0].path, '/timestamp');
      const raw = await request(`${server.url}/v1/quarantine/${binary.id}`, { key: keyA });
      assert.deepEqual(raw.json.body, { encoding: 'base64', text: Buffer.from([0xff, 0xfe, 0x00, 0x7b]).toString('base64') });
      const foreign = await request(`${server.url}/v1/quarantine/${text.id}`, { key: keyB });
      assert.equal(foreign.status, 404);
      assert.equal(foreign.json.code, 'BM_ERR_NOT_FOUND');
      assert.equal((await request(`${server.url}/v1/quarantine/999999999`, { key: keyA })).status, 404);
    });

    it('refuses bad parameters naming the field, and keys without read scope', async () => {
      for (const [query, path] of [['limit=0', '/limit'], ['limit=abc', '/limit'], ['cursor=x', '/cursor'], ['includeReplayed=yes', '/includeReplayed']] as const) {
        const reply = await request(`${server.url}/v1/quarantine?${query}`, { key: keyA });
        assert.equal(reply.status, 400, query);
        assert.equal(reply.json.errors[0].path, path);
      }
      const created = await runCli(['keys', 'create', '--tenant', 'qa', '--scope', 'ingest', ...storeArgs]);
      assert.equal(created.code, 0, created.stderr);
      const ingestOnly = await request(`${server.url}/v1/quarantine`, { key: created.stdout.trim() });
      assert.equal(ingestOnly.status, 403);
      assert.equal(ingestOnly.json.code, 'BM_ERR_AUTH_SCOPE');
      assert.equal((await request(`${server.url}/v1/quarantine/1`)).status, 401);
    });
  });
}
