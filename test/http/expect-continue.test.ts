/** `Expect: 100-continue` is answered 100 only after the key is checked: a refused client never sends its body. */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { minimalWireEvent } from '../support/events.js';
import { startServer, tempDir } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';

let server: ServerProcess;
before(async () => {
  server = await startServer({ dataDir: tempDir() });
});
after(() => server.stop());

/** Sends the head of a POST expecting 100-continue; resolves what the server says before any body is sent. */
async function headOnly(key: string, body: string): Promise<{ socket: Socket; first: () => Promise<string>; all: () => string; closed: Promise<void> }> {
  const socket = connect(server.port, '127.0.0.1');
  let received = '';
  let wake: (() => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString();
    wake?.();
  });
  const closed = new Promise<void>((done) => socket.once('close', () => done()));
  await new Promise<void>((done) => socket.once('connect', () => done()));
  socket.write(`POST /s3 HTTP/1.1\r\nhost: x\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nexpect: 100-continue\r\n\r\n`);
  const first = () =>
    new Promise<string>((done) => {
      const check = () => {
        const end = received.indexOf('\r\n\r\n');
        if (end >= 0) done(received.slice(0, end));
      };
      wake = check;
      check();
    });
  return { socket, first, all: () => received, closed };
}

describe('Expect: 100-continue', () => {
  const body = JSON.stringify({ ...(minimalWireEvent('ListBuckets') as object), eventId: 'continued' });

  it('a wrong key gets 401 without 100 Continue, and the connection is closed', async () => {
    const exchange = await headOnly('bmk_' + 'x'.repeat(43), body);
    const head = await exchange.first();
    assert.match(head, /^HTTP\/1\.1 401 /, `first answer: ${head}`);
    await exchange.closed;
    assert.doesNotMatch(exchange.all(), /100 Continue/);
  });

  it('a missing key too', async () => {
    const socket = connect(server.port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.write(`POST /s3 HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 10\r\nexpect: 100-continue\r\n\r\n`);
    await closed;
    assert.match(received, /^HTTP\/1\.1 401 /);
  });

  it('a valid key gets 100 Continue, then the reply to the body', async () => {
    const exchange = await headOnly(server.bootstrapKey!, body);
    assert.equal(await exchange.first(), 'HTTP/1.1 100 Continue');
    exchange.socket.write(body);
    await new Promise<void>((done) => {
      const wait = () => (/"eventId":"continued"/.test(exchange.all()) ? done() : setTimeout(wait, 20));
      wait();
    });
    assert.match(exchange.all(), /HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    exchange.socket.destroy();
  });
});
