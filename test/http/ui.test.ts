/**
 * The dashboard's files: every file of ui/ and uPlot's from node_modules served under /ui/ as they
 * are, without a key, each under the Content-Security-Policy; `/` and `/ui` redirect to `/ui/`;
 * nothing else is served from there. (The dashboard itself is tested in a browser: test-ui/.)
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, startServer, tempDir } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';

const require = createRequire(import.meta.url);

describe('dashboard files', () => {
  let server: ServerProcess;
  before(async () => {
    server = await startServer({ dataDir: tempDir() });
  });
  after(() => server.stop());

  it('serves every file of ui/ and uPlot as they are, under a policy without inline script', async () => {
    const files: [string, string][] = [
      ...readdirSync(join(ROOT, 'ui')).map((name): [string, string] => [name === 'index.html' ? '/ui/' : `/ui/${name}`, join(ROOT, 'ui', name)]),
      ['/ui/vendor/uPlot.esm.js', require.resolve('uplot/dist/uPlot.esm.js')],
      ['/ui/vendor/uPlot.min.css', require.resolve('uplot/dist/uPlot.min.css')],
    ];
    for (const [path, file] of files) {
      const reply = await fetch(`${server.url}${path}`);
      assert.equal(reply.status, 200, path);
      assert.ok(Buffer.from(await reply.arrayBuffer()).equals(readFileSync(file)), path);
      const type = { html: 'text/html', js: 'text/javascript', css: 'text/css' }[file.slice(file.lastIndexOf('.') + 1)];
      assert.equal(reply.headers.get('content-type'), `${type}; charset=utf-8`, path);
      const csp = reply.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.equal(reply.headers.get('x-content-type-options'), 'nosniff');
    }
    // The page loads its one script from a file.
    const html = readFileSync(join(ROOT, 'ui/index.html'), 'utf8');
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/);
    assert.doesNotMatch(html, /\son[a-z]+=/i);
  });

  it('redirects / and /ui to /ui/, and serves nothing else under /ui/', async () => {
    for (const path of ['/', '/ui']) {
      const reply = await fetch(`${server.url}${path}`, { redirect: 'manual' });
      assert.equal(reply.status, 302, path);
      assert.equal(reply.headers.get('location'), '/ui/');
    }
    for (const path of ['/ui/nope.js', '/ui/../package.json', '/ui/%2e%2e/package.json', '/ui/vendor/uPlot.cjs.js', '/ui/index.html']) {
      const reply = await fetch(`${server.url}${path}`);
      assert.equal(reply.status, 404, path);
      assert.equal(reply.headers.get('content-type'), 'application/problem+json; charset=utf-8', path);
    }
  });

  it('refuses a bare "GET /" line (HTTP/0.9) with a problem, not a redirect', async () => {
    const answer = await new Promise<string>((done, fail) => {
      let text = '';
      const socket = connect(server.port, '127.0.0.1', () => socket.end('GET /\r\n\r\n'));
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
      socket.on('close', () => done(text));
      socket.on('error', fail);
    });
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(answer, /"code":"BM_ERR_BAD_REQUEST"/);
  });
});
