/** Overload: 3× the measured capacity for 30 s (see scenarios/overload.ts). */
import { after, describe, it } from 'node:test';
import { overloadScenario } from './scenarios/overload.js';
import { MiB } from './support/measure.js';
import { dropTargets, sqliteTarget } from './support/stores.js';

after(dropTargets);

describe('overload', () => {
  it('sqlite: 3× capacity for 30 s is refused with 503, loses nothing, recovers within 5 s', (t) =>
    overloadScenario(t, {
      target: sqliteTarget(),
      queueMaxEvents: 2000,
      batchSize: 100,
      clients: 8,
      measureSeconds: 5,
      overloadSeconds: 30,
      factor: 3,
      maxInFlight: 2000,
      maxRss: 768 * MiB,
      // The write queue is bounded and the excess refused before its body is read: what may grow is
      // the waiting connections and their buffers.
      maxRssGrowth: 128 * MiB,
      maxRefusalP99Ms: 1000,
      machineSpeed: true,
    }));
});
