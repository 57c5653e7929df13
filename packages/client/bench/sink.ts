/**
 * A stand-in for bucketmeter that only reads each batch (gunzip, JSON.parse) and answers that all
 * were accepted: delivery to it is the client's own ceiling, with no store behind. It answers the
 * batch-size GET with 500, as bucketmeter does when not busy. Prints {"url"} once listening.
 */
import http from 'node:http';
import { gunzipSync } from 'node:zlib';

const server = http.createServer((req, res) => {
  if (req.method === 'GET') return void res.end('500');
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const accepted = (JSON.parse(gunzipSync(Buffer.concat(chunks)).toString()) as unknown[]).length;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ accepted, duplicates: 0, rejected: [] }));
  });
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })));
