/** The short run of test-reliability/outage.test.ts. */
import { after, describe, it } from 'node:test';
import { diskFullScenario, postgresOutageScenario } from '../../test-reliability/scenarios/outage.js';
import { backend, dropTargets, freshTarget } from '../../test-reliability/support/stores.js';

after(dropTargets);
const postgres = backend('postgres');

describe('store outage (short)', () => {
  // The slowest answer while hung may exceed the full run's 7 s by 3 s on a machine busy with other tests.
  it('postgres: connection cut for 3 s, then hung for 8 s, under load', { skip: postgres.skip }, async (t) =>
    postgresOutageScenario(t, { target: await freshTarget(postgres), cutSeconds: 3, hangSeconds: 8, maxAnswerWhileHungMs: 10_000 }));

  it('sqlite: disk full for 2 s under load', (t) => diskFullScenario(t, { fullSeconds: 2, mustRun: false }));
});
