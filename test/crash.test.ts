/**
 * Durability: the server is killed with SIGKILL under concurrent single and batch load; after restart,
 * every acknowledged event is present exactly once and nothing that was never sent appears.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { allStoredIds, runLoad } from './support/load.js';
import { startServer, tempDir } from './support/server.js';

const ROUNDS = 3;

describe('kill -9 under load (SQLite)', () => {
  it(`loses no acknowledged event over ${ROUNDS} kills`, async () => {
    const dataDir = tempDir();
    let server = await startServer({ dataDir });
    const key = server.bootstrapKey!;
    const sent = new Set<string>();
    const acknowledged = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const victim = server;
      const killAfter = 400 + Math.floor(Math.random() * 800);
      const killed = sleep(killAfter).then(() => victim.kill());
      const load = await runLoad({ url: victim.url, key, connections: 32, batchEvery: 5, batchSize: 20, prefix: `r${round}`, until: killed });
      await killed;
      for (const id of load.sent) sent.add(id);
      for (const id of load.acknowledged) acknowledged.add(id);
      assert.ok(load.acknowledged.size > 0, `round ${round}: some events were acknowledged before the kill`);
      server = await startServer({ dataDir });
      const stored = await allStoredIds(server.url, key);
      const storedSet = new Set(stored);
      assert.equal(stored.length, storedSet.size, 'no event stored twice');
      const lost = [...acknowledged].filter((id) => !storedSet.has(id));
      assert.deepEqual(lost, [], `round ${round}: acknowledged events lost`);
      const invented = stored.filter((id) => !sent.has(id));
      assert.deepEqual(invented, [], 'nothing stored that was never sent');
    }
    assert.equal(await server.stop(), 0);
  });
});
