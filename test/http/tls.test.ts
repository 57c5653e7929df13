/** --tls-cert/--tls-key serve HTTPS directly, with a certificate this test makes. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startServer, tempDir } from '../support/server.js';

describe('HTTPS', () => {
  it('serves /ping over TLS with the given certificate', async () => {
    const dir = tempDir();
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    const server = await startServer({ dataDir: join(dir, 'data'), args: ['--tls-cert', cert, '--tls-key', key], protocol: 'https' });
    try {
      const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpsRequest(`${server.url}/ping`, { ca: readFileSync(cert), headers: { 'x-api-key': server.bootstrapKey! } }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(status, 200);
      assert.equal(body, '"PONG"');
    } finally {
      await server.stop();
    }
  });
});
