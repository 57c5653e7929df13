/** --request-timeout-ms past Node's own request timeout (300 s): the server starts and answers. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { request, startServer, tempDir } from '../support/server.js';

it('starts with --request-timeout-ms above 300 s (Node checks its headers timeout against its own request timeout)', async () => {
  const server = await startServer({ dataDir: tempDir(), args: ['--request-timeout-ms', '600000'] });
  try {
    const reply = await request(`${server.url}/healthz`);
    assert.equal(reply.status, 200);
  } finally {
    await server.stop();
  }
});
