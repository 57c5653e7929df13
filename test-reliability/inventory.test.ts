/**
 * The object inventory under real processes: two PostgreSQL nodes (one with --workers 2) storing the
 * same generated history at once, each event sent to both, and a server killed with SIGKILL while it
 * stores one, on both stores. Afterwards stored bytes (/v1/usage, CSV for exact byte-hours) and the
 * listings (/v1/objects) equal the reference model over exactly the events that were stored, and
 * `usage verify` finds nothing.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { byteHours } from '../src/inventory/measures.js';
import { BACKENDS, dropFreshStores } from '../test/support/backends.js';
import { allStoredIds } from '../test/support/load.js';
import { createKey, request, runCli, startServer } from '../test/support/server.js';
import type { ServerProcess } from '../test/support/server.js';
import { BUCKETS, opArb, T0 } from '../test/store/contract/inventory.js';
import { measures, simulate } from '../test/inventory/reference.js';
import type { RefEvent } from '../test/inventory/reference.js';

after(dropFreshStores);

const iso = (t: number) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const FROM = T0 - 3600;
const HOURS = 12;

/** A few hundred generated operations on a handful of keys, so that concurrent units touch the same ones. */
function history(seed: number, length: number): RefEvent[] {
  const [ops] = fc.sample(fc.array(opArb, { minLength: length, maxLength: length }), { seed, numRuns: 1 });
  return ops!.map((op, i) => ({ ...op, eventId: `h${seed}-${i}`, provider: 'wasabi' }));
}

function shuffled<T>(items: readonly T[], seed: number): T[] {
  const [order] = fc.sample(fc.array(fc.nat(), { minLength: items.length, maxLength: items.length }), { seed, numRuns: 1 });
  return items.map((item, i) => ({ item, k: order![i]! })).sort((a, b) => a.k - b.k).map((x) => x.item);
}

/** Cuts `events` into batches of 1, 7 and 40 in turn. */
function batches(events: readonly RefEvent[]): RefEvent[][] {
  const out: RefEvent[][] = [];
  const sizes = [1, 7, 40];
  for (let at = 0, s = 0; at < events.length; s++) {
    out.push(events.slice(at, at + sizes[s % sizes.length]!));
    at += sizes[s % sizes.length]!;
  }
  return out;
}

/** Sends a batch in the wire format; every event must be stored or answered as a duplicate. */
async function send(server: ServerProcess, key: string, batch: RefEvent[]): Promise<number> {
  const reply = await request(`${server.url}/s3/batch`, { key, body: batch.map((e) => ({ ...e, timestamp: iso(e.timestamp) })) });
  if (reply.status === 200) assert.deepEqual([reply.json.rejected, reply.json.accepted + reply.json.duplicates], [[], batch.length], reply.text);
  return reply.status;
}

/** The server's stored bytes (hourly, per customer) and listings, compared with the model of `events`. */
async function expectModel(server: ServerProcess, key: string, events: RefEvent[], note: string): Promise<void> {
  const lives = simulate(events);
  const reply = await request(`${server.url}/v1/usage?from=${iso(FROM)}&to=${iso(FROM + HOURS * 3600)}&granularity=hour&groupBy=customerId&storage=true&format=csv`, { key });
  assert.equal(reply.status, 200, reply.text);
  const [header, ...lines] = reply.text.trim().split(/\r?\n/);
  const columns = header!.split(',');
  const at = (name: string) => columns.indexOf(name);
  const got = new Map(lines.map((line) => {
    const cells = line.split(',');
    const storage = ['storedByteHours', 'storedBytes', 'objects', 'deleteMarkers', 'unknownSizeObjects', 'incompleteUploadBytes'].map((m) => cells[at(m)]);
    return [`${cells[at('start')]}|${cells[at('customerId')]}`, storage.join(',')];
  }));
  for (let h = 0; h < HOURS; h++) {
    const a = FROM + h * 3600;
    for (const customer of [null, 'c1', 'c2']) {
      const [byteSeconds, ...levels] = measures(lives.filter((l) => l.customerId === customer), a, a + 3600);
      const want = [byteHours(byteSeconds!), ...levels].join(',');
      const row = got.get(`${iso(a)}|${customer ?? ''}`) ?? '0,0,0,0,0,0';
      assert.equal(row, want, `${note}: hour ${iso(a)}, customer ${customer}`);
    }
  }
  for (const t of [T0 + 1800, T0 + 3604, T0 + 5 * 3600, T0 + 10 * 3600]) {
    for (const bucket of BUCKETS) {
      const listed = await request(`${server.url}/v1/objects?bucket=${bucket}&at=${iso(t)}&includeVersions=true&limit=1000`, { key });
      assert.equal(listed.status, 200, listed.text);
      const gotObjects = listed.json.objects.map((o: Record<string, unknown>) => `${o.key}|${o.versionId}|${o.size}|${(o.created as { eventId: string }).eventId}`).sort();
      const wantObjects = lives
        .filter((l) => (l.what === 'version' || l.what === 'marker') && l.bucket === bucket && l.start <= t && (l.end === null || l.end > t))
        .map((l) => `${l.key}|${l.versionId}|${l.size}|${l.createdBy}`)
        .sort();
      assert.deepEqual(gotObjects, wantObjects, `${note}: objects of ${bucket} at ${iso(t)}`);
    }
  }
}

async function verify(tenant: string, storeArgs: string[]): Promise<void> {
  const result = await runCli(['usage', 'verify', '--tenant', tenant, '--from', iso(T0 - 86400), '--to', iso(T0 + 30 * 86400), ...storeArgs]);
  assert.equal(result.code, 0, result.stdout + result.stderr);
}

const postgres = BACKENDS.find((b) => b.name === 'postgres')!;

describe('inventory: two PostgreSQL nodes storing the same history at once', { skip: postgres.skip }, () => {
  it('equals the model, whichever node stored each event and however often', async () => {
    const storeArgs = await postgres.fresh();
    const key = await createKey('nodes', storeArgs);
    const servers: ServerProcess[] = [];
    try {
      servers.push(await startServer({ args: storeArgs }), await startServer({ args: [...storeArgs, '--workers', '2'] }));
      const events = history(1, 400);
      // Every event goes to both nodes, in different orders, four senders at a time.
      const work = [...batches(shuffled(events, 2)).map((b) => [0, b] as const), ...batches(shuffled(events, 3)).map((b) => [1, b] as const)];
      const queue = shuffled(work, 4);
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let item = queue.shift(); item !== undefined; item = queue.shift()) assert.equal(await send(servers[item[0]]!, key, [...item[1]]), 200);
        }),
      );
      await expectModel(servers[0]!, key, events, 'node 1');
      await expectModel(servers[1]!, key, events, 'node 2');
      await verify('nodes', storeArgs);
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
  });
});

for (const backend of BACKENDS) {
  describe(`inventory: kill -9 while storing (${backend.name})`, { skip: backend.skip }, () => {
    it('holds exactly the events that were stored after the restart, and all of them once resent', async () => {
      const storeArgs = await backend.fresh();
      const key = await createKey('crash', storeArgs);
      const events = history(5, 600);
      const byId = new Map(events.map((e) => [e.eventId, e]));
      const pending = batches(shuffled(events, 6));
      let server = await startServer({ args: storeArgs });
      // Killed once a third of the batches are acknowledged, with others in flight.
      const target = Math.ceil(pending.length / 3);
      let acknowledged = 0;
      const statuses: number[] = [];
      const senders = Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let batch = pending.shift(); batch !== undefined; batch = pending.shift()) {
            const status = await send(server, key, batch).catch(() => 0);
            statuses.push(status);
            if (status !== 200) break;
            acknowledged++;
          }
        }),
      );
      let sending = true;
      void senders.finally(() => (sending = false));
      while (sending && acknowledged < target) await new Promise((r) => setTimeout(r, 5));
      await server.kill();
      await senders;
      // After the kill a request fails to connect (0); nothing else but 200 is acceptable.
      assert.deepEqual(statuses.filter((s) => s !== 200 && s !== 0), []);
      assert.ok(acknowledged > 0 && pending.length > 0, 'the kill fell in the middle of the history');
      server = await startServer({ args: storeArgs });
      try {
        const stored = (await allStoredIds(server.url, key)).map((id) => byId.get(id)!);
        assert.ok(stored.length > 0 && stored.length < events.length, `${stored.length} of ${events.length} stored before the kill`);
        await expectModel(server, key, stored, 'after the restart');
        for (const batch of batches(events)) assert.equal(await send(server, key, batch), 200);
        await expectModel(server, key, events, 'after resending everything');
        await verify('crash', storeArgs);
      } finally {
        await server.stop();
      }
    });
  });
}
