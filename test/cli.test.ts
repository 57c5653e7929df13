/** The bucketmeter command as users run it: first start, keys, quarantine, configuration, SIGTERM. */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { minimalWireEvent } from './support/events.js';
import { createKey, request, runCli, startServer, tempDir } from './support/server.js';

/** The hosted service's key format, which its Java collector checks at start. */
const KEY_PATTERN = /^([A-Za-z0-9]{8}\.)?[A-Za-z0-9+/]{48}$/;

function filesContain(dir: string, needle: string): boolean {
  return readdirSync(dir).some((name) => readFileSync(join(dir, name)).includes(needle));
}

describe('bucketmeter serve', () => {
  it('creates and prints a key on the first start only, and stops cleanly on SIGTERM', async () => {
    const dataDir = tempDir();
    const first = await startServer({ dataDir });
    assert.match(first.bootstrapKey ?? '', KEY_PATTERN);
    const reply = await request(`${first.url}/s3`, { key: first.bootstrapKey!, body: { ...(minimalWireEvent('ListBuckets') as object), eventId: 'before-stop' } });
    assert.equal(reply.status, 200);
    assert.equal(await first.stop(), 0);
    assert.ok(!first.output().split(first.bootstrapKey!).slice(1).join('').includes(first.bootstrapKey!), 'the key appears once in the output');

    const second = await startServer({ dataDir });
    assert.equal(second.bootstrapKey, undefined);
    const page = await request(`${second.url}/v1/events`, { key: first.bootstrapKey! });
    assert.deepEqual(page.json.events.map((e: { eventId: string }) => e.eventId), ['before-stop']);
    assert.equal(await second.stop(), 0);
    assert.ok(!filesContain(dataDir, first.bootstrapKey!), 'the key itself is not stored');
  });

  it('reports every invalid setting at once', async () => {
    const result = await runCli(['serve', '--port', 'abc', '--workers', '3', '--tls-cert', 'x.pem'], { DATABASE_URL: '' });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--port/);
    assert.match(result.stderr, /--workers/);
    assert.match(result.stderr, /--tls-key/);
  });
});

describe('bucketmeter keys', () => {
  it('create prints only the key; list shows ids, never keys; revoke revokes', async () => {
    const dataDir = tempDir();
    const store = ['--data-dir', dataDir];
    const created = await runCli(['keys', 'create', '--init', '--tenant', 'acme', ...store]);
    assert.equal(created.code, 0, created.stderr);
    const key = created.stdout.trim();
    assert.match(key, KEY_PATTERN);
    assert.equal(created.stdout, key + '\n');

    const list = await runCli(['keys', 'list', ...store]);
    assert.equal(list.code, 0);
    assert.ok(!list.stdout.includes(key));
    const row = list.stdout.split('\n').find((l) => l.includes('acme'));
    assert.ok(row);
    const id = row.split(/\s+/)[0]!;
    assert.match(id, /^[A-Za-z0-9]{8}$/);
    assert.equal(key.split('.')[0], id, 'the key id is the public prefix of the key');
    assert.ok(!filesContain(dataDir, key), 'only the hash is stored');

    assert.equal((await runCli(['keys', 'revoke', id, ...store])).code, 0);
    assert.match((await runCli(['keys', 'list', ...store])).stdout, new RegExp(`${id}\\s+acme\\s+\\S+\\s+\\d{4}-`));
    assert.equal((await runCli(['keys', 'revoke', id, ...store])).code, 1, 'revoking twice says so');
  });
});

describe('bucketmeter quarantine', () => {
  it('lists, shows, exports and replays rejected inputs', async () => {
    const dataDir = tempDir();
    const store = ['--data-dir', dataDir];
    const server = await startServer({ dataDir, args: ['--max-extra-bytes', '16'] });
    const key = server.bootstrapKey!;
    const tooMuchExtra = { ...(minimalWireEvent('HeadBucket') as object), eventId: 'replay-me', note: 'an extra field longer than sixteen bytes' };
    assert.equal((await request(`${server.url}/s3`, { key, body: tooMuchExtra })).status, 400);
    assert.equal((await request(`${server.url}/s3`, { key, raw: '{nope', headers: { 'content-type': 'application/json' } })).status, 400);
    // Refused first, then sent again without the long extra and stored: its replay is a duplicate.
    const storedSince = { ...(minimalWireEvent('HeadBucket') as object), eventId: 'stored-since', note: 'this one is far too long as well' };
    assert.equal((await request(`${server.url}/s3`, { key, body: storedSince })).status, 400);
    assert.equal((await request(`${server.url}/s3`, { key, body: { ...storedSince, note: 'short' } })).status, 200);
    assert.equal(await server.stop(), 0);

    const list = await runCli(['quarantine', 'list', ...store]);
    assert.equal(list.code, 0, list.stderr);
    assert.equal(list.stdout.trim().split('\n').length, 4, list.stdout);
    assert.match(list.stdout, /BM_ERR_EVENT_INVALID/);
    assert.match(list.stdout, /BM_ERR_BODY_INVALID_JSON/);

    const exported = (await runCli(['quarantine', 'export', ...store])).stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(exported.length, 3);
    const invalid = exported.find((e) => e.code === 'BM_ERR_EVENT_INVALID' && JSON.parse(e.body).eventId === 'replay-me');
    assert.deepEqual(JSON.parse(invalid.body), tooMuchExtra);
    assert.equal(invalid.tenant, 'default');
    assert.equal(invalid.source, 'POST /s3');

    const shown = await runCli(['quarantine', 'show', String(invalid.id), ...store]);
    assert.deepEqual(JSON.parse(shown.stdout), invalid);

    // After an "upgrade" that accepts larger extras, replay stores the event once and reports the one
    // stored since as a duplicate; the bad JSON stays.
    const replay = await runCli(['quarantine', 'replay', ...store, '--max-extra-bytes', '4096']);
    assert.equal(replay.code, 0, replay.stderr);
    assert.deepEqual(JSON.parse(replay.stdout), { examined: 3, replayed: 2, events: 1, duplicates: 1, stillInvalid: 1 });
    const again = await runCli(['quarantine', 'replay', ...store, '--max-extra-bytes', '4096']);
    assert.deepEqual(JSON.parse(again.stdout), { examined: 1, replayed: 0, events: 0, duplicates: 0, stillInvalid: 1 });
    assert.equal((await runCli(['quarantine', 'list', ...store])).stdout.trim().split('\n').length, 2, 'replayed entries leave the default list');
    assert.equal((await runCli(['quarantine', 'list', '--all', ...store])).stdout.trim().split('\n').length, 4);

    const restarted = await startServer({ dataDir });
    const page = await request(`${restarted.url}/v1/events`, { key });
    assert.deepEqual(page.json.events.map((e: { eventId: string; note: string }) => [e.eventId, e.note]), [['replay-me', tooMuchExtra.note], ['stored-since', 'short']]);
    await restarted.stop();
  });
});

describe('keys across tenants', () => {
  it('keys create for two tenants gives two working keys', async () => {
    const dataDir = tempDir();
    const a = await createKey('a', ['--data-dir', dataDir]);
    const b = await createKey('b', ['--data-dir', dataDir]);
    assert.notEqual(a, b);
    const server = await startServer({ dataDir });
    assert.equal(server.bootstrapKey, undefined, 'no bootstrap key when keys exist');
    assert.equal((await request(`${server.url}/ping`, { key: a })).status, 200);
    assert.equal((await request(`${server.url}/ping`, { key: b })).status, 200);
    await server.stop();
  });
});
