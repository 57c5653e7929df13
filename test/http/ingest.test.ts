/**
 * Single-event ingestion over real HTTP against a real server process, on each backend: every kind with
 * every field comes back unchanged from /v1/events, every required field is enforced, and the habits of
 * the existing clients are accepted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { ACTION_NAMES, KINDS } from '../../src/events/catalogue.js';
import { fullWireEvent, minimalWireEvent } from '../support/events.js';
import { request, runCli, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';

for (const backend of BACKENDS) {
  describe(`single-event ingestion (${backend.name})`, { skip: backend.skip }, () => {
    let storeArgs: string[];
    let server: ServerProcess;
    let key: string;

    before(async () => {
      storeArgs = await backend.fresh();
      server = await startServer({ args: storeArgs });
      assert.ok(server.bootstrapKey, 'first start prints a key');
      key = server.bootstrapKey;
    });
    after(() => server.stop());

    async function stored(eventId: string): Promise<Record<string, unknown>> {
      // eventIds are unique per test, so the newest page holds it; walk pages to be sure.
      let cursor: string | null = null;
      do {
        const page = await request(`${server.url}/v1/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key });
        assert.equal(page.status, 200);
        const found = page.json.events.find((e: { eventId: string }) => e.eventId === eventId);
        if (found) return found;
        cursor = page.json.nextCursor;
      } while (cursor);
      throw new Error(`event ${eventId} not stored`);
    }

    /** What /v1/events must show for a wire event that needed no normalization (UTC timestamp, no aliases). */
    function asStored(wire: Record<string, unknown>): Record<string, unknown> {
      return wire.action === 'GetObject' && wire.isBillableEgress === undefined ? { ...wire, isBillableEgress: true } : wire;
    }

    describe('POST /storage: every kind', () => {
      /** The bodies refused for a missing field, each to be found in quarantine. */
      const refused: Record<string, unknown>[] = [];
      for (const action of ACTION_NAMES) {
        it(`${action}: accepted, every field preserved`, async () => {
          const wire = fullWireEvent(action, { eventId: `full-${action}`, serviceId: 'svc-checkout' }) as Record<string, unknown>;
          const reply = await request(`${server.url}/storage`, { key, body: wire });
          assert.equal(reply.status, 200, reply.text);
          assert.deepEqual(reply.json, { eventId: `full-${action}`, duplicate: false });
          const { receivedAt, ...event } = await stored(`full-${action}`);
          assert.match(String(receivedAt), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
          assert.deepEqual(event, asStored(wire));
        });

        for (const field of ['action', 'timestamp', 'provider', ...KINDS[action].required]) {
          it(`${action}: missing ${field} → 400 naming /${field}, quarantined`, async () => {
            const wire = minimalWireEvent(action) as Record<string, unknown>;
            delete wire[field];
            const reply = await request(`${server.url}/s3`, { key, body: wire });
            assert.equal(reply.status, 400, reply.text);
            assert.match(reply.headers.get('content-type') ?? '', /^application\/problem\+json/);
            assert.ok(reply.json.errors.some((e: { path: string }) => e.path === `/${field}`), JSON.stringify(reply.json.errors));
            refused.push(wire);
          });
        }
      }

      it('every event refused for a missing field is in quarantine, as sent, with its errors', async () => {
        const exported = await runCli(['quarantine', 'export', ...storeArgs]);
        assert.equal(exported.code, 0, exported.stderr);
        const entries = exported.stdout.trim().split('\n').map((line) => JSON.parse(line) as { code: string; source: string; body: string; errors: { path: string }[] });
        assert.ok(refused.length > 100, `${refused.length} refusals recorded`);
        for (const wire of refused) {
          const body = JSON.stringify(wire);
          const entry = entries.find((e) => e.body === body);
          assert.ok(entry, `not in quarantine: ${body}`);
          assert.equal(entry.code, 'BM_ERR_EVENT_INVALID');
          assert.equal(entry.source, 'POST /s3');
          assert.ok(entry.errors.length > 0);
        }
      });
    });

    describe('wire-format habits', () => {
      it('takes every path alias of the single-event endpoint', async () => {
        for (const path of ['/storage', '/storage/singleCopy', '/s3', '/s3/single']) {
          const reply = await request(`${server.url}${path}`, { key, body: minimalWireEvent('ListBuckets') });
          assert.equal(reply.status, 200, `${path}: ${reply.text}`);
          assert.equal(reply.json.duplicate, false);
          assert.match(reply.json.eventId, /^bm-[0-9a-z]{13}$/);
        }
      });

      it('normalizes timestamps, aliases, empty strings, nulls and provider case', async () => {
        const reply = await request(`${server.url}/s3`, {
          key,
          body: {
            action: 'PutObject',
            timestamp: '2024-05-01T14:00:00.987+02:00',
            provider: 'Wasabi',
            bucketName: 'media',
            objectKey: 'photos/cat.jpg',
            bytes: 2048,
            versionId: '',
            fileType: 'image',
            customerId: null,
            featureId: '',
            clientType: 'web',
            eventId: 'habits-1',
          },
        });
        assert.equal(reply.status, 200, reply.text);
        const { receivedAt: _r, ...event } = await stored('habits-1');
        assert.deepEqual(event, {
          eventId: 'habits-1',
          action: 'PutObject',
          timestamp: '2024-05-01T12:00:00Z',
          provider: 'wasabi',
          bucket: 'media',
          objectKey: 'photos/cat.jpg',
          bytes: 2048,
          objectCategory: 'image',
          fileType: 'image',
          clientType: 'web',
        });
      });

      it('defaults isBillableEgress to true and keeps an explicit false', async () => {
        const base = minimalWireEvent('GetObject') as Record<string, unknown>;
        await request(`${server.url}/s3`, { key, body: { ...base, eventId: 'egress-absent' } });
        await request(`${server.url}/s3`, { key, body: { ...base, eventId: 'egress-null', isBillableEgress: null } });
        await request(`${server.url}/s3`, { key, body: { ...base, eventId: 'egress-false', isBillableEgress: false } });
        assert.equal((await stored('egress-absent')).isBillableEgress, true);
        assert.equal((await stored('egress-null')).isBillableEgress, true);
        assert.equal((await stored('egress-false')).isBillableEgress, false);
      });

      it('rejects action "Unknown" with a clear error naming /action, under a code of its own', async () => {
        const reply = await request(`${server.url}/s3`, { key, body: { action: 'Unknown', timestamp: '2024-05-01T12:00:00Z', provider: 'aws' } });
        assert.equal(reply.status, 400);
        assert.equal(reply.json.code, 'BM_ERR_EVENT_UNMAPPED');
        assert.equal(reply.json.errors[0].path, '/action');
        assert.match(reply.json.errors[0].received, /Unknown/);
      });

      it('answers an invalid event with problem+json naming field, expectation and what came', async () => {
        const reply = await request(`${server.url}/s3`, { key, body: { ...(minimalWireEvent('UploadPart') as object), partNumber: 0 } });
        assert.equal(reply.status, 400);
        assert.equal(reply.json.status, 400);
        assert.equal(reply.json.type, 'urn:bucketmeter:error:BM_ERR_EVENT_INVALID');
        const [error] = reply.json.errors;
        assert.equal(error.path, '/partNumber');
        assert.deepEqual(error, { path: '/partNumber', message: 'partNumber must be an integer from 1 to 10000', expected: 'integer 1 to 10000', received: 'number 0' });
      });
    });

    describe('dedup by eventId', () => {
      it('stores a resent event once and answers duplicate', async () => {
        const wire = { ...(minimalWireEvent('HeadObject') as object), eventId: 'dedup-1' };
        const first = await request(`${server.url}/s3`, { key, body: wire });
        const second = await request(`${server.url}/s3`, { key, body: wire });
        assert.deepEqual(first.json, { eventId: 'dedup-1', duplicate: false });
        assert.deepEqual(second.json, { eventId: 'dedup-1', duplicate: true });
        const page = await request(`${server.url}/v1/events?action=HeadObject&limit=1000`, { key });
        assert.equal(page.json.events.filter((e: { eventId: string }) => e.eventId === 'dedup-1').length, 1);
      });

      it('refuses a client eventId with the server prefix', async () => {
        const reply = await request(`${server.url}/s3`, { key, body: { ...(minimalWireEvent('ListBuckets') as object), eventId: 'bm-0000000000001' } });
        assert.equal(reply.status, 400);
        assert.equal(reply.json.errors[0].path, '/eventId');
      });
    });
  });
}

after(dropFreshStores);
