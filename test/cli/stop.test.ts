/**
 * A stop must not wait on clients: a connection whose request ends after SIGTERM is closed after its
 * reply; a request behind it gets 503 BM_ERR_SHUTTING_DOWN with Retry-After, as every 503.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { minimalWireEvent } from '../support/events.js';
import { startServer, tempDir } from '../support/server.js';

/** Far below the 65 s keep-alive timeout a lingering connection would hold the stop for. */
const STOP_BOUND_MS = 20_000;

describe('graceful stop', () => {
  it('answers the request in flight, refuses the one behind it as shutting down, then closes its keep-alive connection and exits', async () => {
    const server = await startServer({ dataDir: tempDir() });
    const body = JSON.stringify({ ...(minimalWireEvent('ListBuckets') as object), eventId: 'in-flight' });
    const socket = connect(server.port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const socketClosed = new Promise<void>((done) => socket.once('close', () => done()));
    await new Promise<void>((done) => socket.once('connect', () => done()));
    // Headers now, body after the signal: the request is in flight when the stop begins.
    socket.write(`POST /s3 HTTP/1.1\r\nhost: x\r\nx-api-key: ${server.bootstrapKey!}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: keep-alive\r\n\r\n`);
    await new Promise((done) => setTimeout(done, 200));
    const exited = new Promise<number | null>((done) => server.child.once('exit', (code) => done(code)));
    server.child.kill('SIGTERM');
    await new Promise((done) => setTimeout(done, 200));
    // A second request pipelined behind it reaches the node while it stops.
    socket.write(`${body}GET /ping HTTP/1.1\r\nhost: x\r\nx-api-key: ${server.bootstrapKey!}\r\n\r\n`);
    const outcome = await Promise.race([exited.then((code) => ({ code })), new Promise<'hung'>((done) => setTimeout(() => done('hung'), STOP_BOUND_MS).unref())]);
    socket.destroy();
    assert.notEqual(outcome, 'hung', `the server was still running ${STOP_BOUND_MS} ms after SIGTERM:\n${server.output()}`);
    assert.deepEqual(outcome, { code: 0 });
    await socketClosed;
    assert.match(received, /^HTTP\/1\.1 200 /, 'the request in flight was answered');
    assert.match(received, /"eventId":"in-flight"/);
    // The request behind it: refused as every error is (problem+json, a code, Retry-After), not Fastify's bare 503.
    const refused = received.slice(received.indexOf('HTTP/1.1 ', 1));
    assert.match(refused, /^HTTP\/1\.1 503 /);
    assert.match(refused, /\r\ncontent-type: application\/problem\+json/i);
    assert.match(refused, /\r\nretry-after: 1\r\n/i);
    assert.match(refused, /\r\nconnection: close\r\n/i);
    assert.match(refused, /"code":"BM_ERR_SHUTTING_DOWN"/);
  });
});
