/** Slow clients against --request-timeout-ms 2000 (see scenarios/slow.ts). */
import { after, describe, it } from 'node:test';
import { slowScenario } from './scenarios/slow.js';
import { dropTargets } from './support/stores.js';

after(dropTargets);

describe('slow clients', () => {
  it('1,000 slowloris, 500 slow bodies and 200 idle connections are cut in time; normal clients keep their latency', (t) =>
    slowScenario(t, { requestTimeoutMs: 2000, slowHeaders: 1000, slowBodies: 500, idle: 200, normalClients: 8, cutSlackMs: 1000, latencyFloorMs: 250, latencyFactor: 5 }));
});
