/**
 * The usage rollups are folded after commit: a server killed (SIGKILL) after answering 2xx and before
 * any fold loses nothing. With its background catch-up held back, a real server stores a workload
 * (batches, single events, resent duplicates, invalid events), is checked to have folded none of it,
 * and is killed; restarted, its rollups equal the reference over the events sent, at every shape,
 * and verify agrees. Both stores.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import type { WireEvent } from '../support/events.js';
import { iso, queryString, send, shuffle } from '../support/workload.js';
import { createKey, request, runCli, startServer } from '../support/server.js';
import { countedEvents, MEASURE_NAMES, reference, windowLabel } from './reference.js';
import type { Dim, RefQuery } from './reference.js';
import { attachDerived } from '../../src/store/sqlite/derived.js';

const FROM = Date.parse('2026-03-01T00:00:00Z') / 1000;
const TO = FROM + 2 * 86400;
const N = 1500;
const HELD_BACK = { BUCKETMETER_TEST_CATCH_UP_DELAY_MS: '600000' };

after(dropFreshStores);

/** A deterministic workload: every measure, several values per dimension, 2 days; every 10th without eventId, every 50th invalid. */
function workload(): { event: WireEvent; valid: boolean }[] {
  const sent: { event: WireEvent; valid: boolean }[] = [];
  const actions = ['GetObject', 'PutObject', 'UploadPart', 'HeadObject', 'DeleteObject'];
  for (let i = 0; i < N; i++) {
    const action = actions[i % actions.length]!;
    const event: WireEvent = {
      action,
      timestamp: i % 50 === 0 ? 'not a time' : iso(FROM + ((i * 7919) % (2 * 86400))),
      provider: i % 3 === 0 ? 'wasabi' : 'aws',
      bucket: `b${i % 4}`,
      objectKey: `k${i}`,
      customerId: `c${i % 7}`,
      featureId: `f${i % 3}`,
      clientType: i % 2 === 0 ? 'web' : 'ios',
      clientId: `d${i % 11}`,
    };
    if (action === 'UploadPart') Object.assign(event, { uploadId: 'u', partNumber: 1 });
    if (action !== 'HeadObject' && action !== 'DeleteObject') event.bytes = i * 1000;
    if (action === 'GetObject' && i % 4 === 0) event.isBillableEgress = false;
    if (i % 10 !== 0) event.eventId = `e${i}`;
    sent.push({ event, valid: i % 50 !== 0 });
  }
  // Retries of some, with other bytes: the first stored copy counts.
  for (let i = 1; i < N; i += 13) if (sent[i]!.valid && sent[i]!.event.eventId !== undefined) sent.push({ event: { ...sent[i]!.event, bytes: 1 }, valid: true });
  return shuffle(sent, 7);
}

/** label|values → measures, as reference() keys them. */
async function usage(url: string, key: string, q: RefQuery): Promise<Map<string, bigint[]>> {
  const reply = await request(`${url}/v1/usage?${queryString(q)}`, { key });
  assert.equal(reply.status, 200, reply.text);
  assert.equal(reply.json.nextCursor ?? null, null);
  const out = new Map<string, bigint[]>();
  for (const row of reply.json.rows as Record<string, unknown>[]) {
    const values = q.groupBy.map((d) => row[d] as string | null);
    out.set(`${windowLabel(q.granularity, q.timeZone, Date.parse(row.start as string) / 1000)}|${JSON.stringify(values)}`, MEASURE_NAMES.map((m) => BigInt(row[m] as number)));
  }
  return out;
}

/** Events stored and not folded, read from the store itself. */
async function unfolded(storeArgs: string[]): Promise<number> {
  if (storeArgs[0] === '--data-dir') {
    const path = join(storeArgs[1]!, 'bucketmeter.db');
    const db = new Database(path, { readonly: true });
    try {
      attachDerived(db, path);
      return db.prepare("SELECT (SELECT value FROM counters WHERE name = 'event_seq') - (SELECT value FROM derived_counters WHERE name = 'usage_seq')").pluck().get() as number;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: storeArgs[1] });
  await client.connect();
  try {
    return Number((await client.query('SELECT coalesce(sum(last_seq - first_seq + 1), 0) AS n FROM usage_outbox')).rows[0].n);
  } finally {
    await client.end();
  }
}

for (const backend of BACKENDS) {
  describe(`usage after kill -9 before the fold (${backend.name})`, { skip: backend.skip }, () => {
    it('rollups equal the reference over the stored events after a restart', async () => {
      const storeArgs = await backend.fresh();
      const key = await createKey('crash', storeArgs);
      const sent = workload();
      const first = await startServer({ args: storeArgs, env: HELD_BACK });
      try {
        // Batches of 40 (COPY on PostgreSQL takes larger units; these go by statement) and one large batch.
        await send(first.url, key, sent.slice(0, 1000).map((s) => s.event), 40);
        await send(first.url, key, sent.slice(1000, 1010).map((s) => s.event), 1);
        await send(first.url, key, sent.slice(1010).map((s) => s.event), 1000);
        const stored = countedEvents(sent).length;
        assert.equal(await unfolded(storeArgs), stored, 'every stored event waits for its fold');
      } finally {
        await first.kill();
      }
      const second = await startServer({ args: storeArgs, env: HELD_BACK });
      try {
        const events = countedEvents(sent);
        const shapes: Dim[][] = [['provider', 'action'], ['provider', 'customerId', 'featureId', 'clientType', 'action'], ['provider', 'bucket', 'customerId', 'featureId', 'clientType', 'clientId', 'action']];
        for (const groupBy of shapes) {
          const q: RefQuery = { from: FROM, to: TO, granularity: 'hour', timeZone: 'UTC', groupBy, filters: {} };
          assert.deepEqual(Object.fromEntries(await usage(second.url, key, q)), Object.fromEntries(reference(events, q)), groupBy.join(','));
        }
        assert.equal(await unfolded(storeArgs), 0, 'the read folded everything');
        const verify = await runCli(['usage', 'verify', '--tenant', 'crash', '--from', iso(FROM), '--to', new Date(Date.now() + 86_400_000).toISOString().slice(0, 10) + 'T00:00:00Z', ...storeArgs]);
        assert.equal(verify.code, 0, verify.stdout + verify.stderr);
      } finally {
        await second.stop();
      }
    });
  });
}
