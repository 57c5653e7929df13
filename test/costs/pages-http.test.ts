/**
 * GET /v1/costs asked again through a real server (the cost thread's kept page texts), both stores:
 * the same bytes while nothing changed, JSON and CSV each its own; after a new event of the month,
 * a reply with the event, byte for byte what a server started afresh on the same store sends.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { createKey, request, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';
import { iso, send } from '../support/workload.js';

const MONTH = Date.parse('2026-09-01T00:00:00Z') / 1000;
const DAY = 86400;
const CUSTOMERS = 20;

const events = Array.from({ length: CUSTOMERS * 10 }, (_, i) => ({
  action: 'GetObject',
  provider: 'aws',
  bucket: 'media',
  objectKey: `o${i}`,
  bytes: 1_000_000 * (1 + (i % 7)),
  customerId: `c${i % CUSTOMERS}`,
  timestamp: iso(MONTH + (i % 28) * DAY + i),
  eventId: `e${i}`,
}));

after(dropFreshStores);

for (const backend of BACKENDS) {
  describe(`cost pages asked again over HTTP (${backend.name})`, { skip: backend.skip }, () => {
    let store: string[];
    let server: ServerProcess;
    let key: string;
    const path = `/v1/costs?from=${iso(MONTH)}&to=${iso(MONTH + 30 * DAY)}&granularity=day&groupBy=customerId`;
    const get = async (url: string, format: 'json' | 'csv') => {
      const response = await fetch(`${url}${path}&format=${format}`, { headers: { 'x-api-key': key } });
      const body = Buffer.from(await response.arrayBuffer());
      assert.equal(response.status, 200, body.toString());
      return body;
    };

    before(async () => {
      store = await backend.fresh();
      key = await createKey('acme', store);
      server = await startServer({ args: store });
      await send(server.url, key, events, 100);
    });
    after(async () => {
      assert.equal(await server?.stop(30_000), 0);
    });

    it('sends the same bytes asked again, JSON and CSV each their own, and an answer with a new event as a fresh server does', async () => {
      const json = await get(server.url, 'json');
      const csv = await get(server.url, 'csv');
      // A row per customer and day read on.
      assert.equal(JSON.parse(json.toString()).rows.length, new Set(events.map((e) => `${e.customerId} ${e.timestamp.slice(0, 10)}`)).size);
      assert.ok(csv.toString().startsWith('start,end,customerId,'), 'CSV');
      assert.deepEqual(await get(server.url, 'json'), json);
      assert.deepEqual(await get(server.url, 'csv'), csv);
      const late = { action: 'GetObject', provider: 'aws', bucket: 'media', objectKey: 'late', bytes: 200_000_000_000, customerId: 'late', timestamp: iso(MONTH + 3 * DAY), eventId: 'late' };
      const ingest = await request(`${server.url}/s3`, { key, body: late });
      assert.equal(ingest.status, 200, ingest.text);
      const again = await get(server.url, 'json');
      const rows = (JSON.parse(again.toString()) as { rows: { customerId: string; egressCost: string }[] }).rows;
      assert.ok(Number(rows.find((r) => r.customerId === 'late')?.egressCost) > 0, "the late event's egress priced");
      const csvAgain = await get(server.url, 'csv');
      assert.match(csvAgain.toString(), /,late,/);
      assert.equal(await server.stop(30_000), 0);
      server = await startServer({ args: store });
      assert.deepEqual(await get(server.url, 'json'), again, "a fresh server's reply");
      assert.deepEqual(await get(server.url, 'csv'), csvAgain, "a fresh server's CSV");
    });
  });
}
