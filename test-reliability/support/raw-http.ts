/** HTTP/1.1 over a bare socket, for requests no client library would send and bodies sent slowly or endlessly. */
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** The complete responses at the start of `data` (Content-Length framed, as every bucketmeter reply is). */
function parseResponses(data: Buffer): RawResponse[] {
  const responses: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const end = data.indexOf('\r\n\r\n', at);
    if (end < 0) return responses;
    const [statusLine = '', ...lines] = data.subarray(at, end).toString('latin1').split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
    if (!match) return responses;
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    if (data.length < end + 4 + length) return responses;
    responses.push({ status: Number(match[1]), headers, body: data.subarray(end + 4, end + 4 + length) });
    at = end + 4 + length;
  }
}

export interface Exchange {
  responses: RawResponse[];
  /** Milliseconds from connecting until the server closed the connection (undefined: it did not, within the wait). */
  closedAfterMs: number | undefined;
}

export interface ExchangeOptions {
  /** Writes the request, maybe slowly; `answered()` turns true once the server answered or closed. */
  write: (socket: Socket, answered: () => boolean) => Promise<void>;
  /** Give up waiting for the server after this long. */
  waitMs: number;
  /**
   * Half-close after writing, so that the server knows the request is all there is; but first wait
   * up to this long for an answer: Node aborts a request whose client half-closes before it is
   * answered (an answer that awaits the database would be lost).
   */
  endAfterMs?: number;
}

export function exchange(port: number, options: ExchangeOptions): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    const chunks: Buffer[] = [];
    let closed = false;
    let settled = false;
    const finish = (closedAfterMs: number | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ responses: parseResponses(Buffer.concat(chunks)), closedAfterMs });
    };
    const timer = setTimeout(() => finish(undefined), options.waitMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
      finish(Date.now() - started);
    });
    socket.once('connect', () => {
      const answered = () => closed || chunks.length > 0;
      options.write(socket, answered).then(
        async () => {
          if (options.endAfterMs === undefined) return;
          for (const until = Date.now() + options.endAfterMs; !answered() && Date.now() < until; ) await sleep(10);
          if (!closed) socket.end();
        },
        () => {},
      );
    });
  });
}

/** Writes all of `bytes` at once. */
export function sendAll(bytes: Buffer): ExchangeOptions['write'] {
  return async (socket) => {
    socket.write(bytes);
  };
}

/**
 * Writes `head`, then `total` bytes of body in chunks, honouring backpressure, until done, or until the
 * server answers when `untilAnswered` (a server that refused the body may still read it to the end).
 */
export function streamBody(head: string, total: number, options: { chunked: boolean; untilAnswered: boolean }): ExchangeOptions['write'] {
  const piece = Buffer.alloc(64 * 1024, 'x');
  return async (socket, answered) => {
    const stop = () => socket.destroyed || (options.untilAnswered && answered());
    socket.write(head);
    for (let sent = 0; sent < total && !stop(); sent += piece.length) {
      const chunk = piece.subarray(0, Math.min(piece.length, total - sent));
      const ok = socket.write(options.chunked ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk);
      if (!ok) {
        await new Promise<void>((go) => {
          const done = () => {
            socket.off('drain', done).off('close', done);
            go();
          };
          socket.on('drain', done).on('close', done);
        });
      }
    }
    if (options.chunked && !stop()) socket.write('0\r\n\r\n');
  };
}
