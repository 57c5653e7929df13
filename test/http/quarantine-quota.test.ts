/**
 * One tenant's invalid input is bounded: so many quarantine entries a day, then refused with a code
 * (nothing of the request stored), and a batch reply details only its first rejections.
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { minimalWireEvent } from '../support/events.js';
import { createKey, request, runCli, startServer, tempDir } from '../support/server.js';

const valid = (eventId: string) => ({ ...(minimalWireEvent('ListBuckets') as object), eventId });
const invalid = (n: number) => ({ ...(minimalWireEvent('ListBuckets') as object), action: `Nope${n}` });

async function quarantined(dataDir: string, tenant: string): Promise<number> {
  const exported = await runCli(['quarantine', 'export', '--all', '--tenant', tenant, '--data-dir', dataDir]);
  assert.equal(exported.code, 0, exported.stderr);
  return exported.stdout.trim() === '' ? 0 : exported.stdout.trim().split('\n').length;
}

describe('quarantine quota per tenant and day', () => {
  it('refuses with 429 BM_ERR_QUARANTINE_QUOTA past the limit, stores nothing of that request, spares other tenants, survives a restart', async () => {
    const dataDir = tempDir();
    const noisy = await createKey('noisy', ['--data-dir', dataDir]);
    const quiet = await createKey('quiet', ['--data-dir', dataDir]);
    const args = ['--quarantine-max-per-day', '5', '--batch-reply-max-rejected', '3'];
    let server = await startServer({ dataDir, args });

    // 4 invalid of 6: all quarantined, the reply details the first 3 and counts 4.
    const first = await request(`${server.url}/s3/batch`, { key: noisy, body: [invalid(0), valid('ok-1'), invalid(1), invalid(2), valid('ok-2'), invalid(3)] });
    assert.equal(first.status, 200);
    assert.equal(first.json.accepted, 2);
    assert.equal(first.json.rejectedCount, 4);
    assert.deepEqual(first.json.rejected.map((r: { index: number }) => r.index), [0, 2, 3]);

    // 2 more would make 6 > 5: refused whole, its valid event not stored either.
    const over = await request(`${server.url}/s3/batch`, { key: noisy, body: [invalid(4), valid('refused-with-batch'), invalid(5)] });
    assert.equal(over.status, 429);
    assert.equal(over.json.code, 'BM_ERR_QUARANTINE_QUOTA');
    assert.match(over.json.detail, /put 4 inputs in quarantine today \(UTC\); the limit is 5 a day, and this request would add 2/);
    const retryAfter = Number(over.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 86_400, `Retry-After until the next UTC day: ${retryAfter}`);

    // The fifth fits; the sixth (a single event, or a body that is not JSON) does not.
    assert.equal((await request(`${server.url}/s3`, { key: noisy, body: invalid(6) })).status, 400);
    const single = await request(`${server.url}/s3`, { key: noisy, body: invalid(7) });
    assert.equal(single.status, 429);
    assert.equal(single.json.code, 'BM_ERR_QUARANTINE_QUOTA');
    assert.equal((await request(`${server.url}/s3`, { key: noisy, raw: '{not json', headers: { 'content-type': 'application/json' } })).json.code, 'BM_ERR_QUARANTINE_QUOTA');

    // Valid input is still taken; another tenant is not limited by this one.
    assert.equal((await request(`${server.url}/s3`, { key: noisy, body: valid('still-ok') })).status, 200);
    assert.equal((await request(`${server.url}/s3`, { key: quiet, body: invalid(8) })).status, 400);

    // A restart does not reset the day's count.
    assert.equal(await server.stop(), 0);
    server = await startServer({ dataDir, args });
    assert.equal((await request(`${server.url}/s3`, { key: noisy, body: invalid(9) })).json.code, 'BM_ERR_QUARANTINE_QUOTA');
    const page = await request(`${server.url}/v1/events`, { key: noisy });
    assert.deepEqual(page.json.events.map((e: { eventId: string }) => e.eventId).sort(), ['ok-1', 'ok-2', 'still-ok']);
    assert.equal(await server.stop(), 0);
    assert.equal(await quarantined(dataDir, 'noisy'), 5);
    assert.equal(await quarantined(dataDir, 'quiet'), 1);
  });

  it('a 71-byte gzip of 10,000 invalid events gets a small reply: 100 detailed, all counted', async () => {
    const dataDir = tempDir();
    const server = await startServer({ dataDir });
    const body = gzipSync(Buffer.from(`[${Array.from({ length: 10_000 }, () => '{}').join(',')}]`), { level: 9 });
    assert.ok(body.length < 100, `${body.length} bytes sent`);
    const reply = await request(`${server.url}/s3/batch`, { key: server.bootstrapKey!, raw: body, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
    assert.equal(reply.status, 200);
    assert.equal(reply.json.rejectedCount, 10_000);
    assert.equal(reply.json.rejected.length, 100);
    assert.deepEqual(reply.json.rejected.map((r: { index: number }) => r.index), Array.from({ length: 100 }, (_, i) => i));
    assert.ok(reply.text.length < 64 * 1024, `reply of ${reply.text.length} bytes`);
    assert.equal(await server.stop(), 0);
  });
});
