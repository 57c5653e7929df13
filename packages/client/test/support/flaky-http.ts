/**
 * An HTTP proxy in front of a real bucketmeter that makes some batch requests fail in the two ways
 * that matter: refused (503 + Retry-After, the server never saw it) and lost (the server stored the
 * batch, but the client is told 503: a retry then sends events already stored). It can also show
 * each batch's body, decompressed, as the server reads it.
 */
import http from 'node:http';
import { gunzipSync } from 'node:zlib';

export interface FlakyProxy {
  url: string;
  refused: number;
  lost: number;
  close(): Promise<void>;
}

export async function startFlakyProxy(target: string, fate: (n: number) => 'pass' | 'refuse' | 'lose', onBatch?: (json: Buffer) => void): Promise<FlakyProxy> {
  const upstream = new URL(target);
  let n = 0;
  const proxy: FlakyProxy = { url: '', refused: 0, lost: 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    const batch = req.url?.includes('/batch') === true;
    const verdict = batch ? fate(n++) : 'pass';
    if (batch && onBatch !== undefined) {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        onBatch(req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body);
      });
    }
    if (verdict === 'refuse') {
      proxy.refused++;
      req.resume();
      res.writeHead(503, { 'retry-after': '0', 'content-type': 'application/problem+json' }).end('{"status":503}');
      return;
    }
    const forward = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      if (verdict === 'lose') {
        proxy.lost++;
        answer.resume();
        answer.on('end', () => res.writeHead(503, { 'retry-after': '0' }).end());
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const address = server.address() as { port: number };
  proxy.url = `http://127.0.0.1:${address.port}`;
  proxy.close = () => new Promise((done) => { server.closeAllConnections(); server.close(() => done()); });
  return proxy;
}
