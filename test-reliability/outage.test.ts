/** The store failing under load: PostgreSQL connection cut, SQLite disk full (see scenarios/outage.ts). */
import { after, describe, it } from 'node:test';
import { diskFullScenario, postgresOutageScenario } from './scenarios/outage.js';
import { backend, dropTargets, freshTarget, requireBackend } from './support/stores.js';

after(dropTargets);
const postgres = backend('postgres');

describe('store outage', () => {
  it('postgres: connection cut for 10 s, then hung for 15 s, under load', async (t) => {
    requireBackend(postgres);
    // The server gives up on a hung store after 5 s; 2 s more for the answer itself.
    await postgresOutageScenario(t, { target: await freshTarget(postgres), cutSeconds: 10, hangSeconds: 15, maxAnswerWhileHungMs: 7000 });
  });

  it('sqlite: disk full for 5 s under load', (t) => diskFullScenario(t, { fullSeconds: 5, mustRun: true }));
});
