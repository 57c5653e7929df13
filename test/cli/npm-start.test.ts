/** `npm start` as a container or service manager runs it: a signal to npm must reach the server. */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { minimalWireEvent } from '../support/events.js';
import { request, startServer, tempDir } from '../support/server.js';

function portIsFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once('error', () => done(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => done(true)));
  });
}

describe('npm start', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to npm stops the server gracefully: port freed, every acknowledged event stored`, async () => {
      const dataDir = tempDir();
      const server = await startServer({ dataDir, npmStart: true });
      const key = server.bootstrapKey!;
      // Writes in flight when the signal comes: each one answered 200 must be stored.
      const acknowledged: string[] = [];
      const writes = Array.from({ length: 40 }, (_, i) => {
        const eventId = `${signal}-${i}`;
        return request(`${server.url}/s3`, { key, body: { ...(minimalWireEvent('ListBuckets') as object), eventId } }).then(
          (reply) => {
            if (reply.status === 200) acknowledged.push(eventId);
          },
          () => undefined, // refused connection after the stop began: not acknowledged
        );
      });
      await writes[0];
      server.child.kill(signal);
      const code = await new Promise<number | null>((done) => server.child.once('exit', (c) => done(c)));
      await Promise.all(writes);
      assert.equal(code, 0, server.output());
      assert.match(server.output(), /"msg":"stopped"/, 'the server itself got the signal and stopped cleanly');
      assert.ok(await portIsFree(server.port), 'nothing holds the port after npm exits');
      assert.ok(acknowledged.length > 0);

      const again = await startServer({ dataDir });
      const page = await request(`${again.url}/v1/events?limit=1000`, { key });
      const stored = new Set(page.json.events.map((e: { eventId: string }) => e.eventId));
      assert.deepEqual(acknowledged.filter((id) => !stored.has(id)), [], 'acknowledged events missing after the stop');
      assert.equal(await again.stop(), 0);
    });
  }
});
