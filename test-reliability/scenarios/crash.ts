/**
 * kill -9 at random moments under concurrent single and batch load with unique eventIds. After every
 * restart the database must open, and what is stored must be exactly what was acknowledged plus at
 * most what was in flight: nothing lost, nothing doubled, nothing that was never sent.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { allStoredIds, runLoad } from '../../test/support/load.js';
import { WIRE_TIMESTAMP_SECONDS } from '../../test/support/events.js';
import { createKey, request, runCli, startServer } from '../../test/support/server.js';
import type { ServerProcess } from '../../test/support/server.js';
import { Tally, report } from '../support/measure.js';
import { audit, serverOptions, sqliteIntegrity, storeArgs, storedEventIds } from '../support/stores.js';
import type { Audit, StoreTarget } from '../support/stores.js';

export interface CrashOptions {
  target: StoreTarget;
  kills: number;
  /** The kill comes this long after the server is up: uniformly random in [min, max] ms. */
  killAfterMs: [min: number, max: number];
  connections: number;
}

const TENANT = 'crash';

export async function crashScenario(t: TestContext, options: CrashOptions): Promise<void> {
  const { target } = options;
  // Created before the first start, so the server prints no bootstrap key.
  const key = await createKey(TENANT, storeArgs(target));
  const sent = new Set<string>();
  const acknowledged = new Set<string>();
  const statuses = new Tally<number>();
  let requests = 0;
  let networkErrors = 0;
  let slowestStartMs = 0;
  let stored: string[] = [];
  let found: Audit = { lost: [], doubled: [], unsent: [], storedUnacknowledged: 0 };
  const started = Date.now();

  const start = async (): Promise<ServerProcess> => {
    const at = Date.now();
    const server = await startServer(serverOptions(target));
    slowestStartMs = Math.max(slowestStartMs, Date.now() - at);
    return server;
  };

  let server = await start();
  // A failed assertion must not leave a server running (it would keep the test process alive).
  t.after(() => server.kill());
  for (let round = 0; round < options.kills; round++) {
    const victim = server;
    const [min, max] = options.killAfterMs;
    const killed = sleep(min + Math.random() * (max - min)).then(() => victim.kill());
    const load = await runLoad({ url: victim.url, key, connections: options.connections, batchEvery: 4, batchSize: 25, prefix: `r${round}`, until: killed });
    await killed;
    for (const id of load.sent) sent.add(id);
    for (const id of load.acknowledged) acknowledged.add(id);
    for (const [status, n] of load.statuses) {
      statuses.add(status, n);
      requests += n;
    }
    requests += load.networkErrors;
    networkErrors += load.networkErrors;

    // The restart is the check that the database opens cleanly after the kill.
    server = await start();
    assert.equal((await request(`${server.url}/healthz`)).status, 200, `round ${round}: healthy after restart`);
    stored = await storedEventIds(target, TENANT);
    found = audit(sent, acknowledged, stored);
    assert.deepEqual(found.lost.slice(0, 10), [], `round ${round}: ${found.lost.length} acknowledged events lost`);
    assert.deepEqual(found.doubled.slice(0, 10), [], `round ${round}: ${found.doubled.length} events stored twice`);
    assert.deepEqual(found.unsent.slice(0, 10), [], `round ${round}: ${found.unsent.length} stored events were never sent`);
  }
  if (target.backend === 'sqlite') assert.equal(sqliteIntegrity(target.dataDir), 'ok');
  // The API reports the same events as the database.
  const listed = await allStoredIds(server.url, key);
  assert.deepEqual(new Set(listed), new Set(stored));
  assert.equal(listed.length, stored.length);
  assert.equal(await server.stop(), 0);
  // Usage changes in the transactions of the events it counts: whatever the kills interrupted, the
  // rollups (events' day) and receipts (today) agree with the events stored.
  const day = (seconds: number) => new Date(Math.floor(seconds / 86400) * 86_400_000).toISOString().replace('.000Z', 'Z');
  const today = Date.now() / 1000;
  for (const [from, to] of [[WIRE_TIMESTAMP_SECONDS, WIRE_TIMESTAMP_SECONDS + 86400], [today - 86400, today + 2 * 86400]] as const) {
    const verify = await runCli(['usage', 'verify', '--from', day(from), '--to', day(to), ...storeArgs(target)]);
    assert.equal(verify.code, 0, `usage verify after the kills: ${verify.stdout}${verify.stderr}`);
  }

  assert.ok(acknowledged.size > 0, 'events were acknowledged');
  // Only the kill may interrupt a request (a network error); whatever the server answered was a 200.
  assert.deepEqual([...statuses.keys()], [200], `every answer 200: ${JSON.stringify(statuses)}`);
  report(t, `crash/${target.backend}`, {
    kills: options.kills,
    requests,
    statuses,
    eventsSent: sent.size,
    acknowledged: acknowledged.size,
    stored: stored.length,
    networkErrors,
    storedUnacknowledged: found.storedUnacknowledged,
    lost: found.lost.length,
    doubled: found.doubled.length,
    unsent: found.unsent.length,
    slowestRestartMs: slowestStartMs,
    seconds: (Date.now() - started) / 1000,
  });
}
