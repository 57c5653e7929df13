/**
 * The server's memory bound (docs/BENCHMARKS.md) counts on its main thread's young generation being
 * bounded by the node flags on bin/bucketmeter's first line: left to V8, it grows to two 16 MB
 * semi-spaces under batch ingest, all of them resident.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { minimalWireEvent } from '../support/events.js';
import { request, startServer, tempDir } from '../support/server.js';

const MiB = 1024 * 1024;

describe('main thread young generation', () => {
  it('stays at two 4 MB semi-spaces under concurrent batch ingest, the server started by npm start', async () => {
    const server = await startServer({ dataDir: tempDir(), npmStart: true });
    try {
      const key = server.bootstrapKey!;
      // Eight connections of 1,000-event batches, as the bench's batch phase: enough surviving
      // allocation that V8 grows an unbounded young generation to its maximum.
      const connection = async (c: number) => {
        for (let b = 0; b < 8; b++) {
          const batch = Array.from({ length: 1000 }, (_, i) => minimalWireEvent('GetObject', { eventId: `yg-${c}-${b}-${i}`, bucket: 'b', objectKey: `k${i}` }));
          const reply = await request(`${server.url}/s3/batch`, { key, body: batch });
          assert.equal(reply.status, 200, reply.text);
        }
      };
      await Promise.all(Array.from({ length: 8 }, (_, c) => connection(c)));
      const scrape = await request(`${server.url}/metrics`);
      const match = /^nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)$/m.exec(scrape.text);
      assert.ok(match, 'the scrape has the new space size');
      assert.ok(Number(match[1]) <= 8 * MiB, `new space ${(Number(match[1]) / MiB).toFixed(1)} MiB`);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});
