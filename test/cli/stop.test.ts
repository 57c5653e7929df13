/** A stop must not wait on clients: a connection whose request ends after SIGTERM is closed after its reply. */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { minimalWireEvent } from '../support/events.js';
import { startServer, tempDir } from '../support/server.js';

/** Far below the 65 s keep-alive timeout a lingering connection would hold the stop for. */
const STOP_BOUND_MS = 20_000;

describe('graceful stop', () => {
  it('answers the request in flight, then closes its keep-alive connection and exits', async () => {
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
    socket.write(body);
    const outcome = await Promise.race([exited.then((code) => ({ code })), new Promise<'hung'>((done) => setTimeout(() => done('hung'), STOP_BOUND_MS).unref())]);
    socket.destroy();
    assert.notEqual(outcome, 'hung', `the server was still running ${STOP_BOUND_MS} ms after SIGTERM:\n${server.output()}`);
    assert.deepEqual(outcome, { code: 0 });
    await socketClosed;
    assert.match(received, /^HTTP\/1\.1 200 /, 'the request in flight was answered');
    assert.match(received, /"eventId":"in-flight"/);
  });
});
