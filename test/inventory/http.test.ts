/**
 * Stored bytes over HTTP and the CLI, on both stores: README's worked example sent through /s3/batch,
 * a late hard delete that rewrites the past, /v1/usage?storage=true per customer and hour, /v1/objects
 * at several instants with paging, and `usage verify` / `usage rebuild` covering the inventory.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import type { WireEvent } from '../support/events.js';
import { createKey, request, runCli, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';

const base = { provider: 'wasabi', bucket: 'photos' };
/** README "Stored bytes": the worked example, in timestamp order; LATE arrives after the first reads. */
const EXAMPLE: WireEvent[] = [
  { ...base, eventId: 'put-cat', action: 'PutObject', timestamp: '2026-11-02T10:00:00Z', customerId: 'alice', objectKey: 'cat.jpg', versionId: 'v1', bytes: 1000 },
  { ...base, eventId: 'copy-cat', action: 'CopyObject', timestamp: '2026-11-02T10:30:00Z', customerId: 'bob', objectKey: 'cat-copy.jpg', versionId: 'c1', copySource: { bucket: 'photos', objectKey: 'cat.jpg' } },
  { ...base, eventId: 'mpu', action: 'CreateMultipartUpload', timestamp: '2026-11-02T11:00:00Z', customerId: 'alice', objectKey: 'video.mp4', uploadId: 'U' },
  { ...base, eventId: 'part-1', action: 'UploadPart', timestamp: '2026-11-02T11:00:00Z', customerId: 'alice', uploadId: 'U', partNumber: 1, bytes: 5000 },
  { ...base, eventId: 'part-2', action: 'UploadPart', timestamp: '2026-11-02T11:15:00Z', customerId: 'alice', uploadId: 'U', partNumber: 2, bytes: 4000 },
  { ...base, eventId: 'complete', action: 'CompleteMultipartUpload', timestamp: '2026-11-02T11:30:00Z', customerId: 'bob', uploadId: 'U', versionId: 'x1' },
  { ...base, eventId: 'marker', action: 'DeleteObject', timestamp: '2026-11-02T12:00:00Z', customerId: 'alice', objectKey: 'cat.jpg', resultingDeleteMarkerVersionId: 'm1' },
];
const LATE: WireEvent = { ...base, eventId: 'hard-delete', action: 'DeleteObject', timestamp: '2026-11-02T10:45:00Z', customerId: 'alice', objectKey: 'cat.jpg', hardDeletedVersionId: 'v1' };

type Row = Record<string, unknown>;
const STORAGE = ['storedByteHours', 'storedBytes', 'objects', 'deleteMarkers', 'unknownSizeObjects', 'incompleteUploadBytes'];
/** hour (UTC) | customer → storage measures, as README's table shows them. */
const storage = (rows: Row[]) => Object.fromEntries(rows.map((r) => [`${(r.start as string).slice(11, 13)}|${r.customerId}`, STORAGE.map((m) => r[m])]));

for (const backend of BACKENDS) {
  describe(`stored bytes (${backend.name})`, { skip: backend.skip }, () => {
    let server: ServerProcess;
    let storeArgs: string[];
    let key: string;

    before(async () => {
      storeArgs = await backend.fresh();
      key = await createKey('inventory', storeArgs);
      server = await startServer({ args: storeArgs });
    });
    after(async () => {
      await server.stop();
      await dropFreshStores();
    });

    const usage = async () => {
      const reply = await request(`${server.url}/v1/usage?from=2026-11-02T10:00:00Z&to=2026-11-02T13:00:00Z&granularity=hour&groupBy=customerId&storage=true`, { key });
      assert.equal(reply.status, 200, reply.text);
      return storage(reply.json.rows);
    };
    const objects = async (query: string) => {
      const reply = await request(`${server.url}/v1/objects?bucket=photos&${query}`, { key });
      assert.equal(reply.status, 200, reply.text);
      return reply.json;
    };

    it('answers the worked example, and again after a late event rewrote its past', async () => {
      const sent = await request(`${server.url}/s3/batch`, { key, body: [...EXAMPLE].reverse() });
      assert.equal(sent.status, 200, sent.text);
      assert.deepEqual(await usage(), {
        '10|alice': [1000, 1000, 1, 0, 0, 0],
        '10|bob': [500, 1000, 1, 0, 0, 0],
        '11|alice': [1000 + 3500, 1000, 1, 0, 0, 0],
        '11|bob': [5500, 10000, 2, 0, 0, 0],
        '12|alice': [1000, 1000, 1, 1, 0, 0],
        '12|bob': [10000, 10000, 2, 0, 0, 0],
      });
      assert.equal((await request(`${server.url}/s3`, { key, body: LATE })).status, 200);
      assert.deepEqual(await usage(), {
        '10|alice': [750, 0, 0, 0, 0, 0],
        '10|bob': [500, 1000, 1, 0, 0, 0],
        '11|alice': [3500, 0, 0, 0, 0, 0],
        '11|bob': [5500, 10000, 2, 0, 0, 0],
        '12|alice': [0, 0, 0, 1, 0, 0],
        '12|bob': [10000, 10000, 2, 0, 0, 0],
      });
    });

    it('lists the objects at an instant, current versions or all, page by page', async () => {
      const now = await objects('');
      assert.deepEqual(
        now.objects.map((o: Row) => [o.key, o.versionId, o.size, (o.created as Row).eventId, (o.created as Row).customerId]),
        [
          ['cat-copy.jpg', 'c1', 1000, 'copy-cat', 'bob'],
          ['video.mp4', 'x1', 9000, 'complete', 'bob'],
        ],
      );
      const all = await objects('includeVersions=true&at=2026-11-02T12:30:00Z');
      assert.deepEqual(all.objects.map((o: Row) => [o.key, o.versionId, o.deleteMarker, o.size]), [
        ['cat-copy.jpg', 'c1', false, 1000],
        ['cat.jpg', 'm1', true, null],
        ['video.mp4', 'x1', false, 9000],
      ]);
      const past = await objects('includeVersions=true&at=2026-11-02T10:40:00Z&customerId=alice');
      assert.deepEqual(past.objects.map((o: Row) => [o.key, o.ended]), [['cat.jpg', { at: '2026-11-02T10:45:00Z', eventId: 'hard-delete' }]]);
      const paged: string[] = [];
      let cursor: string | null = null;
      do {
        const page: Row = await objects(`includeVersions=true&at=2026-11-02T12:30:00Z&limit=1${cursor === null ? '' : `&cursor=${cursor}`}`);
        paged.push(...(page.objects as Row[]).map((o) => `${o.key}:${o.versionId}`));
        cursor = page.nextCursor as string | null;
      } while (cursor !== null);
      assert.deepEqual(paged, ['cat-copy.jpg:c1', 'cat.jpg:m1', 'video.mp4:x1']);
      // Cursors it could not have made: 400 naming /cursor, never the first page again.
      const cursorOf = (key: unknown) => Buffer.from(JSON.stringify(key)).toString('base64url');
      const real = (await objects('limit=1')).nextCursor as string;
      const forged: [query: string, why: string][] = [
        [`cursor=${cursorOf(['', 0])}`, 'before every key, id 0'],
        [`cursor=${cursorOf(['cat.jpg', -1])}`, 'a negative id'],
        [`cursor=${encodeURIComponent(`${real}=`)}`, 'the real one spelled otherwise (padded)'],
        [`prefix=vid&cursor=${cursorOf(['a', 1])}`, 'a key not under the prefix'],
      ];
      for (const [query, why] of forged) {
        const reply = await request(`${server.url}/v1/objects?bucket=photos&${query}`, { key });
        assert.equal(reply.status, 400, `${why}: ${reply.text}`);
        assert.equal(reply.json.errors[0].path, '/cursor', why);
      }
      assert.deepEqual((await objects(`cursor=${real}`)).objects.map((o: Row) => o.key), ['video.mp4']);
      assert.deepEqual((await objects('prefix=vid')).objects.map((o: Row) => o.key), ['video.mp4']);
    });

    it('lists by a prefix outside the BMP: characters, not UTF-16 units, are compared', async () => {
      const emoji = { provider: 'wasabi', bucket: 'emoji', action: 'PutObject', timestamp: '2026-11-02T10:00:00Z', bytes: 1 };
      const keys = ['\u{1F600}a/1.jpg', '\u{1F600}a', '\u{1F600}b.jpg', 'za.jpg'];
      const sent = await request(`${server.url}/s3/batch`, { key, body: keys.map((objectKey, i) => ({ ...emoji, eventId: `emoji-${i}`, objectKey })) });
      assert.equal(sent.status, 200, sent.text);
      const listed = async (prefix: string) => {
        const reply = await request(`${server.url}/v1/objects?bucket=emoji&prefix=${encodeURIComponent(prefix)}`, { key });
        assert.equal(reply.status, 200, reply.text);
        return reply.json.objects.map((o: Row) => o.key);
      };
      assert.deepEqual(await listed('\u{1F600}a'), ['\u{1F600}a', '\u{1F600}a/1.jpg']);
      assert.deepEqual(await listed('\u{1F600}a/'), ['\u{1F600}a/1.jpg']);
      assert.deepEqual(await listed('\u{1F600}'), ['\u{1F600}a', '\u{1F600}a/1.jpg', '\u{1F600}b.jpg']);
    });

    it('names a bad parameter with a 400', async () => {
      const reply = await request(`${server.url}/v1/objects?at=yesterday`, { key });
      assert.equal(reply.status, 400);
      assert.deepEqual(reply.json.errors.map((e: Row) => e.path).sort(), ['/at', '/bucket']);
      const bad = await request(`${server.url}/v1/usage?from=2026-11-02T10:00:00Z&to=2026-11-02T13:00:00Z&storage=yes`, { key });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.errors[0].path, '/storage');
    });

    it('refuses stored bytes of more rows than a request may hold (every group in every window) with a 422 without Retry-After (the same request is refused again), and answers fewer windows', async () => {
      // 108 clients' objects, hourly from 2025-11-01 to 2026-11-27: 108 × 9,384 rows of levels. Answered,
      // they were built whole in the server's memory (5.6M such rows peaked at 3.7 GB, near the heap's limit).
      const many = await createKey('inventory-many', storeArgs);
      const events: WireEvent[] = Array.from({ length: 108 }, (_, i) => ({ ...base, bucket: 'many', action: 'PutObject', timestamp: '2025-11-01T00:00:00Z', objectKey: `k${i}`, bytes: 1, clientId: `client-${i}` }));
      assert.equal((await request(`${server.url}/s3/batch`, { key: many, body: events })).status, 200);
      const range = 'from=2025-11-01T00:00:00Z&to=2026-11-27T00:00:00Z&groupBy=clientId&storage=true';
      const hourly = await request(`${server.url}/v1/usage?${range}&granularity=hour`, { key: many });
      assert.equal(hourly.status, 422, hourly.text);
      assert.equal(hourly.json.code, 'BM_ERR_ANSWER_TOO_LARGE');
      assert.equal(hourly.headers.get('retry-after'), null);
      assert.match(hourly.json.detail, /108 groups in 9,384 windows are 1,013,472 rows, more than the 1,000,000 a request may hold/);
      const daily = await request(`${server.url}/v1/usage?${range}&granularity=day`, { key: many });
      assert.equal(daily.status, 200, daily.text);
      assert.equal(daily.json.rows.length, 108 * 391);
    });

    it('usage verify and rebuild cover the inventory', async () => {
      const verify = await runCli(['usage', 'verify', '--from', '2026-11-01T00:00:00Z', '--to', '2026-11-04T00:00:00Z', ...storeArgs]);
      assert.equal(verify.code, 0, verify.stdout + verify.stderr);
      assert.match(verify.stdout, /object inventory agree/);
      const rebuild = await runCli(['usage', 'rebuild', '--from', '2026-11-02T00:00:00Z', '--to', '2026-11-03T00:00:00Z', ...storeArgs]);
      assert.equal(rebuild.code, 0, rebuild.stderr);
      assert.match(rebuild.stdout, /object inventory/);
      assert.equal((await usage())['11|bob']![0], 5500);
    });
  });
}
