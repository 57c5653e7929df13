/** The short run of test-reliability/overload.test.ts: 3× capacity for 5 s. */
import { after, describe, it } from 'node:test';
import { overloadScenario } from '../../test-reliability/scenarios/overload.js';
import { MiB } from '../../test-reliability/support/measure.js';
import { dropTargets, sqliteTarget } from '../../test-reliability/support/stores.js';

after(dropTargets);

describe('overload (short)', () => {
  // Capacity measured as long as in the full run: recovery is judged against it. The refusal limit is
  // looser than the full run's 1 s, for a machine busy with other tests.
  it('sqlite: 3× capacity for 5 s is refused with 503, loses nothing, recovers within 5 s', (t) =>
    overloadScenario(t, {
      target: sqliteTarget(),
      queueMaxEvents: 2000,
      batchSize: 100,
      clients: 8,
      measureSeconds: 5,
      overloadSeconds: 5,
      factor: 3,
      maxInFlight: 2000,
      maxRss: 768 * MiB,
      maxRssGrowth: 128 * MiB,
      maxRefusalP99Ms: 3000,
    }));
});
