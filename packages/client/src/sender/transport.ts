/** HTTP to bucketmeter over node:http(s) with keep-alive: the batch POST and the batch-size GET. */
import http from 'node:http';
import https from 'node:https';
import { promisify } from 'node:util';
import { gzip, gzipSync, constants } from 'node:zlib';

const gzipAsync = promisify(gzip);
const GZIP = { level: constants.Z_BEST_SPEED };
/**
 * Bodies up to this size are gzipped in this thread. Handing a 120 KB batch (500 events) to the
 * thread pool held this thread about as long as compressing it here (the stream's setup and
 * hand-offs) and took twice the CPU in all; only a larger body is worth the pool.
 */
const INLINE_GZIP_MAX_BYTES = 1024 * 1024;

export interface HttpReply {
  status: number;
  retryAfter: string | undefined;
  body: string;
}

export class Transport {
  private readonly agent: http.Agent;
  private readonly base: URL;
  private readonly lib: typeof http | typeof https;
  private destroyed = false;

  constructor(url: string, private readonly apiKey: string, private readonly timeoutMs: number) {
    this.base = new URL(url.endsWith('/') ? url : url + '/');
    this.lib = this.base.protocol === 'https:' ? https : http;
    this.agent = new this.lib.Agent({ keepAlive: true, maxSockets: 16 });
  }

  /** POSTs a batch's JSON array, gzipped (level 1: cheap, still ~10x smaller). */
  async postBatch(json: Buffer): Promise<HttpReply> {
    const body = json.length <= INLINE_GZIP_MAX_BYTES ? gzipSync(json, GZIP) : await gzipAsync(json, GZIP);
    return this.send('POST', 'storage/batch', body);
  }

  async recommendedBatchSize(): Promise<number | undefined> {
    // Only a hint: its socket must not keep an otherwise finished process alive.
    const reply = await this.send('GET', 'storage/recommendedBatchSize', undefined, true);
    const size = reply.status === 200 ? Number(reply.body) : NaN;
    return Number.isInteger(size) && size > 0 ? size : undefined;
  }

  /** Ends idle and in-flight connections: what is in flight fails with a network error. */
  destroy(): void {
    this.destroyed = true;
    this.agent.destroy();
  }

  private send(method: string, path: string, body?: Buffer, background = false): Promise<HttpReply> {
    if (this.destroyed) return Promise.reject(new Error('the client is closed'));
    const headers: Record<string, string | number> = { 'x-api-key': this.apiKey, 'user-agent': 'bucketmeter-client-js' };
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length });
    return new Promise((resolve, reject) => {
      const req = this.lib.request(new URL(path, this.base), { method, headers, agent: this.agent, timeout: this.timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const retryAfter = res.headers['retry-after'];
          resolve({ status: res.statusCode ?? 0, retryAfter, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', reject);
      });
      if (background) req.on('socket', (socket) => socket.unref());
      req.on('timeout', () => req.destroy(new Error(`no answer from bucketmeter in ${this.timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}
