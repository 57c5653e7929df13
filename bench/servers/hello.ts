/**
 * Baseline: the node:http hello-world, the ceiling of any Node HTTP server on this core. It reads
 * (and drops) the same POST bodies the other servers get, so the network work is the same.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '5' });
    response.end('hello');
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port, msg: 'bench server listening' })}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)).closeAllConnections());
