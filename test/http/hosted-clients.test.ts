/**
 * Drop-in compatibility with the hosted service's published clients, over real HTTP against a real
 * server on each backend: the SDKs' exact bodies (TypeScript, Python and Go; every kind, every field)
 * and the Java collector's (every kind, in one batch) are stored with their fields mapped onto the
 * typed ones; the collector's `Unknown` is quarantined under a code of its own.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { SDKS, SDK_ACTIONS, JAVA_ACTIONS, javaBody, javaStored, sdkBody, sdkStored } from '../support/hosted-clients.js';
import { request, runCli, startServer } from '../support/server.js';
import type { Reply, ServerProcess } from '../support/server.js';

for (const backend of BACKENDS) {
  describe(`the hosted service's clients (${backend.name})`, { skip: backend.skip }, () => {
    let storeArgs: string[];
    let server: ServerProcess;
    let key: string;

    before(async () => {
      storeArgs = await backend.fresh();
      server = await startServer({ args: storeArgs });
      key = server.bootstrapKey!;
    });
    after(() => server.stop());

    /** The events stored for one customer, as /v1/events shows them, without eventId and receivedAt. */
    async function storedFor(customerId: string): Promise<Record<string, unknown>[]> {
      const page = await request(`${server.url}/v1/events?customerId=${encodeURIComponent(customerId)}&limit=10`, { key });
      assert.equal(page.status, 200, page.text);
      return page.json.events.map(({ eventId: _e, receivedAt: _r, ...event }: Record<string, unknown>) => event);
    }

    for (const sdk of SDKS) {
      describe(`${sdk} SDK: POST /s3, one event of each of its ${SDK_ACTIONS.length} kinds`, () => {
        for (const action of SDK_ACTIONS) {
          it(`${action}: stored with the dialect mapped`, async () => {
            const customerId = `${sdk}-${action}`;
            const body = sdkBody(sdk, action, customerId);
            const reply = await request(`${server.url}/s3`, { key, body });
            assert.equal(reply.status, 200, reply.text);
            assert.equal(reply.json.duplicate, false);
            assert.deepEqual(await storedFor(customerId), [sdkStored(body)]);
          });
        }
      });
    }

    describe(`Java collector: POST /s3/batch with its ${JAVA_ACTIONS.length} kinds`, () => {
      const bodies = JAVA_ACTIONS.map((action) => javaBody(action, `java-${action}`));
      let reply!: Reply;

      before(async () => {
        reply = await request(`${server.url}/s3/batch`, { key, body: bodies, headers: { 'user-agent': 'Java-http-client/17.0.9 v:1.0.10 id:c0ffee00' } });
      });

      it('answers 200 with every event but Unknown accepted', () => {
        assert.equal(reply.status, 200, reply.text);
        const unknownIndex = JAVA_ACTIONS.indexOf('Unknown');
        assert.equal(reply.json.rejected[0].errors[0].path, '/action');
        assert.deepEqual(reply.json, { accepted: bodies.length - 1, duplicates: 0, rejected: [{ index: unknownIndex, errors: reply.json.rejected[0].errors }], rejectedCount: 1 });
      });

      it('stores each event with its fields as sent ("" dropped, serviceId kept)', async () => {
        for (const body of bodies) {
          if (body.action === 'Unknown') continue;
          assert.deepEqual(await storedFor(String(body.customerId)), [javaStored(body)], String(body.action));
        }
      });

      it('quarantines Unknown under BM_ERR_EVENT_UNMAPPED, so it can be found and counted', async () => {
        const exported = await runCli(['quarantine', 'export', ...storeArgs]);
        assert.equal(exported.code, 0, exported.stderr);
        const entries = exported.stdout.trim().split('\n').map((line) => JSON.parse(line));
        const unmapped = entries.filter((entry) => entry.code === 'BM_ERR_EVENT_UNMAPPED');
        assert.equal(unmapped.length, 1);
        assert.deepEqual(JSON.parse(unmapped[0].body), javaBody('Unknown', 'java-Unknown'));
        const list = await runCli(['quarantine', 'list', ...storeArgs]);
        assert.equal(list.stdout.split('\n').filter((line) => line.includes('BM_ERR_EVENT_UNMAPPED')).length, 1, list.stdout);
      });
    });
  });
}

after(() => dropFreshStores());
