/** The short run of test-reliability/overload.test.ts: 3× capacity for 5 s. */
import { after, describe, it } from 'node:test';
import { overloadScenario } from '../../test-reliability/scenarios/overload.js';
import { MiB } from '../../test-reliability/support/measure.js';
import { dropTargets, sqliteTarget } from '../../test-reliability/support/stores.js';

after(dropTargets);

describe('overload (short)', () => {
  // Correctness only: on a machine busy with other tests the load generator may not reach the overload,
  // so rates, latencies and memory are asserted by the full run (test-reliability/) alone.
  it('sqlite: 3× capacity for 5 s: nothing lost or doubled, every refusal a 503 with Retry-After, serving after', (t) =>
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
      machineSpeed: false,
    }));
});
