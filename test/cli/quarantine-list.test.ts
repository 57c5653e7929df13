/** `quarantine list/show/export` print tenants' bytes: escaped, so a body cannot drive the operator's terminal. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { minimalWireEvent } from '../support/events.js';
import { request, runCli, startServer, tempDir } from '../support/server.js';

// biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for raw control characters in the output.
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('quarantine list', () => {
  it('lists newest first by default, oldest first on request, with control characters escaped', async () => {
    const dataDir = tempDir();
    const server = await startServer({ dataDir });
    const actions = ['first', '\u009b2J\u202eevil', 'third\u001b[31m'];
    for (const action of actions) {
      const reply = await request(`${server.url}/s3`, { key: server.bootstrapKey!, body: { ...(minimalWireEvent('ListBuckets') as object), action } });
      assert.equal(reply.status, 400);
    }
    assert.equal(await server.stop(), 0);

    const list = await runCli(['quarantine', 'list', '--data-dir', dataDir]);
    assert.equal(list.code, 0, list.stderr);
    assert.doesNotMatch(list.stdout, RAW_CONTROL, 'no raw control character reaches the terminal');
    assert.match(list.stdout, /\\u009b2J\\u202eevil/, 'shown escaped');
    const ids = list.stdout.trim().split('\n').slice(1).map((line) => Number(line.split(/\s+/)[0]));
    assert.deepEqual(ids, [...ids].sort((a, b) => b - a), 'newest first');
    assert.equal(ids.length, 3);

    const oldest = await runCli(['quarantine', 'list', '--oldest-first', '--data-dir', dataDir]);
    assert.deepEqual(oldest.stdout.trim().split('\n').slice(1).map((line) => Number(line.split(/\s+/)[0])), [...ids].reverse());

    for (const id of ids) {
      const shown = await runCli(['quarantine', 'show', String(id), '--data-dir', dataDir]);
      assert.doesNotMatch(shown.stdout, RAW_CONTROL);
      assert.ok(actions.includes((JSON.parse(JSON.parse(shown.stdout).body) as { action: string }).action), 'the same JSON value, escaped');
    }
    const exported = await runCli(['quarantine', 'export', '--data-dir', dataDir]);
    assert.doesNotMatch(exported.stdout, RAW_CONTROL);
    assert.deepEqual(exported.stdout.trim().split('\n').map((l) => (JSON.parse(JSON.parse(l).body) as { action: string }).action), actions);
  });
});
