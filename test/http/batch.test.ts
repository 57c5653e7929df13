/** Batch ingestion: per-event outcomes, gzip, limits (413), bodies refused whole, quarantine of all of it. */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { minimalWireEvent } from '../support/events.js';
import { request, runCli, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';

for (const backend of BACKENDS) {
  describe(`batch ingestion (${backend.name})`, { skip: backend.skip }, () => {
    let server: ServerProcess;
    let key: string;
    let storeArgs: string[];

    before(async () => {
      storeArgs = await backend.fresh();
      server = await startServer({ args: [...storeArgs, '--max-batch-events', '50', '--max-body-bytes', '65536'] });
      key = server.bootstrapKey!;
    });
    after(() => server.stop());

    const event = (i: number, extra: Record<string, unknown> = {}) => ({ ...(minimalWireEvent('GetObject') as object), objectKey: `k/${i}`, ...extra });

    // biome-ignore lint/suspicious/noExplicitAny: exported quarantine lines, read field by field in assertions.
    async function quarantined(): Promise<Record<string, any>[]> {
      const result = await runCli(['quarantine', 'export', ...storeArgs]);
      assert.equal(result.code, 0, result.stderr);
      return result.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
    }

    describe('POST /storage/batch', () => {
      it('commits valid events, quarantines invalid ones, reports each outcome', async () => {
        const batch = [event(1, { eventId: 'b-1' }), { action: 'Unknown', timestamp: '2024-05-01T12:00:00Z', provider: 'aws' }, event(2), event(3, { bytes: -1 }), event(1, { eventId: 'b-1' })];
        const reply = await request(`${server.url}/s3/batch`, { key, body: batch });
        assert.equal(reply.status, 200, reply.text);
        assert.equal(reply.json.accepted, 2);
        assert.equal(reply.json.duplicates, 1);
        assert.deepEqual(reply.json.rejected.map((r: { index: number }) => r.index), [1, 3]);
        assert.equal(reply.json.rejected[0].errors[0].path, '/action');
        assert.equal(reply.json.rejected[1].errors[0].path, '/bytes');

        const entries = await quarantined();
        const unknown = entries.find((q) => q.source === 'POST /s3/batch' && q.index === 1);
        assert.ok(unknown, 'the Unknown event is in quarantine');
        assert.equal(JSON.parse(unknown.body).action, 'Unknown');
        assert.equal(unknown.code, 'BM_ERR_EVENT_UNMAPPED');
        assert.ok(entries.some((q) => q.source === 'POST /s3/batch' && q.index === 3 && q.code === 'BM_ERR_EVENT_INVALID' && JSON.parse(q.body).bytes === -1));
      });

      it('quarantines items nested too deeply to serialize, without failing the batch', async () => {
        const deep = '['.repeat(15_000) + ']'.repeat(15_000);
        const raw = `[${deep},${JSON.stringify(event(99, { eventId: 'beside-deep' }))},${deep}]`;
        const reply = await request(`${server.url}/s3/batch`, { key, raw, headers: { 'content-type': 'application/json' } });
        assert.equal(reply.status, 200, reply.text);
        assert.equal(reply.json.accepted, 1);
        assert.deepEqual(reply.json.rejected.map((r: { index: number }) => r.index), [0, 2]);
        const entries = (await quarantined()).filter((q) => q.errors[0].path === '' && q.source === 'POST /s3/batch');
        assert.ok(entries.some((q) => q.index === 0 && q.body === raw), 'the raw body is kept for the first such item');
        assert.ok(entries.some((q) => q.index === 2 && JSON.parse(q.body).sameBodyAsIndex === 0));
      });

      it('takes gzip bodies on both paths', async () => {
        for (const path of ['/storage/batch', '/s3/batch']) {
          const body = gzipSync(JSON.stringify([event(10), event(11)]));
          const reply = await request(`${server.url}${path}`, { key, raw: body, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
          assert.equal(reply.status, 200, reply.text);
          assert.deepEqual(reply.json, { accepted: 2, duplicates: 0, rejected: [], rejectedCount: 0 });
        }
      });

      it('takes a gzip body that decompresses in several output chunks, whole', async () => {
        // ~60 KB of JSON from ~1 KB of gzip: more than the reader's first output chunk holds.
        const batch = Array.from({ length: 40 }, (_, i) => event(i, { eventId: `chunked-${i}`, note: 'x'.repeat(1400) }));
        const body = gzipSync(JSON.stringify(batch), { level: 9 });
        assert.ok(body.length * 32 < 60_000, `compressed to ${body.length} bytes`);
        const reply = await request(`${server.url}/storage/batch`, { key, raw: body, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
        assert.equal(reply.status, 200, reply.text);
        assert.deepEqual(reply.json, { accepted: 40, duplicates: 0, rejected: [], rejectedCount: 0 });
        const page = await request(`${server.url}/v1/events?limit=1000`, { key });
        const stored = page.json.events.filter((e: { eventId: string }) => e.eventId.startsWith('chunked-'));
        assert.equal(stored.length, 40);
        assert.ok(stored.every((e: { note: string }) => e.note === 'x'.repeat(1400)), 'every event arrives whole');
      });

      it('answers an empty array with zero counts', async () => {
        const reply = await request(`${server.url}/s3/batch`, { key, body: [] });
        assert.deepEqual(reply.json, { accepted: 0, duplicates: 0, rejected: [], rejectedCount: 0 });
      });

      it('refuses more events than the limit with 413 naming the limit, and keeps the body', async () => {
        const batch = Array.from({ length: 51 }, (_, i) => event(i, { eventId: `too-many-${i}` }));
        const reply = await request(`${server.url}/s3/batch`, { key, body: batch });
        assert.equal(reply.status, 413);
        assert.equal(reply.json.code, 'BM_ERR_BATCH_TOO_MANY_EVENTS');
        assert.equal(reply.json.limit, 50);
        const page = await request(`${server.url}/v1/events?limit=1000`, { key });
        assert.ok(!page.json.events.some((e: { eventId: string }) => e.eventId.startsWith('too-many-')), 'nothing of a refused batch is stored');
        assert.ok((await quarantined()).some((q) => q.code === 'BM_ERR_BATCH_TOO_MANY_EVENTS' && JSON.parse(q.body).length === 51));
      });

      it('refuses a body over the byte limit with 413', async () => {
        const reply = await request(`${server.url}/s3/batch`, { key, raw: JSON.stringify([event(1, { serviceId: 'x'.repeat(70_000) })]), headers: { 'content-type': 'application/json' } });
        assert.equal(reply.status, 413);
        assert.equal(reply.json.code, 'BM_ERR_BODY_TOO_LARGE');
        assert.equal(reply.json.limit, 65536);
      });

      it('answers 413 to a client still sending, drops the rest of its body and keeps the connection', async () => {
        const socket = connect(server.port, '127.0.0.1');
        let received = '';
        socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
        const closed = new Promise<void>((done) => socket.on('close', () => done()));
        socket.write(`POST /s3/batch HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
        const chunk = `10000\r\n${'x'.repeat(0x10000)}\r\n`;
        // Far past the 64 KiB limit, and on after the reply has come, as a client streaming a file does.
        for (let i = 0; i < 64; i++) {
          if (!socket.write(chunk)) await new Promise((drained) => socket.once('drain', drained));
        }
        socket.write(`0\r\n\r\nGET /ping HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`);
        await closed;
        const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
        assert.deepEqual(statuses, [413, 200], received.slice(0, 500));
        assert.match(received, /"code":"BM_ERR_BODY_TOO_LARGE"/);
      });

      it('cuts a client that goes on sending a refused body for 5 s after the 413', async () => {
        const socket = connect(server.port, '127.0.0.1');
        let received = '';
        let answeredAt = 0;
        socket.on('data', (chunk: Buffer) => {
          received += chunk.toString('latin1');
          answeredAt ||= Date.now();
        });
        socket.on('error', () => {});
        const closed = new Promise<number>((done) => socket.on('close', () => done(Date.now())));
        socket.write(`POST /s3 HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n`);
        const sender = setInterval(() => socket.write('x'.repeat(16_384)), 50);
        const closedAt = await closed;
        clearInterval(sender);
        assert.match(received, /^HTTP\/1\.1 413 /);
        const lingered = closedAt - answeredAt;
        assert.ok(lingered >= 4500 && lingered < 9000, `cut ${lingered} ms after the reply`);
      });

      it('stops a gzip bomb at the decompressed limit', async () => {
        const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x20));
        assert.ok(bomb.length < 65536);
        const reply = await request(`${server.url}/s3/batch`, { key, raw: bomb, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
        assert.equal(reply.status, 413);
        assert.equal(reply.json.code, 'BM_ERR_BODY_TOO_LARGE');
      });

      it('refuses a body that is not JSON, or not an array, with 400 and keeps it', async () => {
        const notJson = await request(`${server.url}/s3/batch`, { key, raw: '[{"action": "GetObj', headers: { 'content-type': 'application/json' } });
        assert.equal(notJson.status, 400);
        assert.equal(notJson.json.code, 'BM_ERR_BODY_INVALID_JSON');
        const notArray = await request(`${server.url}/s3/batch`, { key, body: event(1) });
        assert.equal(notArray.status, 400);
        assert.equal(notArray.json.code, 'BM_ERR_BODY_NOT_ARRAY');
        const entries = await quarantined();
        assert.ok(entries.some((q) => q.code === 'BM_ERR_BODY_INVALID_JSON' && q.body === '[{"action": "GetObj'));
        assert.ok(entries.some((q) => q.code === 'BM_ERR_BODY_NOT_ARRAY'));
      });

      it('refuses invalid gzip with 400 and a wrong media type with 415', async () => {
        const badGzip = await request(`${server.url}/s3/batch`, { key, raw: 'not gzip', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
        assert.equal(badGzip.status, 400);
        assert.equal(badGzip.json.code, 'BM_ERR_BODY_BAD_ENCODING');
        const text = await request(`${server.url}/s3/batch`, { key, raw: '[]', headers: { 'content-type': 'text/plain' } });
        assert.equal(text.status, 415);
        assert.equal(text.json.code, 'BM_ERR_UNSUPPORTED_MEDIA_TYPE');
        const none = await request(`${server.url}/s3`, { key, raw: '{}', headers: {} });
        assert.equal(none.status, 415);
        const br = await request(`${server.url}/s3/batch`, { key, raw: '[]', headers: { 'content-type': 'application/json', 'content-encoding': 'br' } });
        assert.equal(br.status, 415);
        assert.equal(br.json.code, 'BM_ERR_UNSUPPORTED_ENCODING');
      });
    });
  });
}

after(dropFreshStores);
