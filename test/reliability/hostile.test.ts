/** The short run of test-reliability/hostile.test.ts: a few thousand hostile requests, smaller bombs. */
import { after, describe, it } from 'node:test';
import { hostileScenario } from '../../test-reliability/scenarios/hostile.js';
import { MiB } from '../../test-reliability/support/measure.js';
import { dropTargets, sqliteTarget } from '../../test-reliability/support/stores.js';

after(dropTargets);

describe('hostile input (short)', () => {
  it('sqlite: every answer a 4xx problem, everything rejected kept, nothing polluted', (t) =>
    hostileScenario(t, { target: sqliteTarget(), requests: 3000, raw: 300, bigTimes: 1, bigBodyBytes: 20 * MiB, bombBytes: 100 * MiB, maxRss: 512 * MiB, connections: 32 }));
});
