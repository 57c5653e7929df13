/** The access log: one line per request with route, status, tenant, duration and sizes; never a key. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { minimalWireEvent } from '../support/events.js';
import { request, startServer, tempDir } from '../support/server.js';

interface Line {
  msg: string;
  [field: string]: unknown;
}

const linesOf = (output: string): Line[] => output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Line);

/** Requests of every kind: accepted, refused by validation, by key, unknown route, batch. */
async function traffic(url: string, key: string): Promise<string> {
  const wrongKey = 'bmk_' + 'W'.repeat(43);
  assert.equal((await request(`${url}/s3`, { key, body: { ...(minimalWireEvent('ListBuckets') as object), eventId: 'logged-1' } })).status, 200);
  assert.equal((await request(`${url}/s3`, { key, body: { ...(minimalWireEvent('ListBuckets') as object), action: 'Nope' } })).status, 400);
  assert.equal((await request(`${url}/s3/batch`, { key, body: [minimalWireEvent('ListBuckets')] })).status, 200);
  assert.equal((await request(`${url}/ping`, { key: wrongKey })).status, 401);
  assert.equal((await request(`${url}/nowhere`, { key })).status, 404);
  return wrongKey;
}

describe('access log', () => {
  it('--access-log: one line per request, with the refusal code and tenant; no key anywhere in the output', async () => {
    const server = await startServer({ dataDir: tempDir(), args: ['--access-log'] });
    const key = server.bootstrapKey!;
    const wrongKey = await traffic(server.url, key);
    assert.equal(await server.stop(), 0);
    const output = server.output();
    const lines = linesOf(output).filter((l) => l.msg === 'request');
    const summary = lines.map((l) => [l.method, l.route, l.status, l.code ?? null, l.tenant]);
    assert.deepEqual(summary, [
      ['POST', '/s3', 200, null, 'default'],
      ['POST', '/s3', 400, 'BM_ERR_EVENT_INVALID', 'default'],
      ['POST', '/s3/batch', 200, null, 'default'],
      ['GET', '/ping', 401, 'BM_ERR_AUTH_INVALID_KEY', null],
      ['GET', null, 404, 'BM_ERR_NOT_FOUND', null],
    ]);
    for (const l of lines) {
      assert.equal(typeof l.durationMs, 'number');
      assert.ok((l.durationMs as number) >= 0);
      assert.equal(typeof l.bytesOut, 'number');
      assert.ok((l.bytesOut as number) > 0, `bytesOut of ${JSON.stringify(l)}`);
      assert.equal(typeof l.bytesIn, 'number');
    }
    assert.ok((lines[0]!.bytesIn as number) > 50, 'bytes in of the event sent');
    assert.match(String(lines[0]!.keyId), /^[A-Za-z0-9]{8}$/, 'the public key id (the 8 characters before the dot), to tell keys apart');
    // The key is printed once on first start, on purpose; after that line it appears nowhere.
    const afterBootstrap = output.slice(output.indexOf(key) + key.length);
    assert.ok(!afterBootstrap.includes(key), 'the valid key is never logged');
    assert.ok(!output.includes(wrongKey), 'a wrong key is never logged');
  });

  it('off by default; refusals at debug level still name their tenant', async () => {
    const server = await startServer({ dataDir: tempDir(), env: { LOG_LEVEL: 'debug' } });
    const key = server.bootstrapKey!;
    const wrongKey = await traffic(server.url, key);
    assert.equal(await server.stop(), 0);
    const lines = linesOf(server.output());
    assert.deepEqual(lines.filter((l) => l.msg === 'request'), [], 'no access log unless asked for');
    const refused = lines.filter((l) => l.msg === 'request refused').map((l) => [l.code, l.tenant]);
    assert.deepEqual(refused, [['BM_ERR_EVENT_INVALID', 'default'], ['BM_ERR_AUTH_INVALID_KEY', null]]);
    const output = server.output();
    assert.ok(!output.slice(output.indexOf(key) + key.length).includes(key));
    assert.ok(!output.includes(wrongKey));
  });
});
