/** The short run of test-reliability/slow.test.ts. */
import { after, describe, it } from 'node:test';
import { slowScenario } from '../../test-reliability/scenarios/slow.js';
import { dropTargets } from '../../test-reliability/support/stores.js';

after(dropTargets);

describe('slow clients (short)', () => {
  // Looser timing than the full run (cut within 3 s past the timeout's check, not 1 s; latency within
  // 1 s or 10× the baseline), for a machine busy with other tests: still cut by the timeouts, still served.
  it('slowloris, slow bodies and idle connections are cut in time; normal clients keep their latency', (t) =>
    slowScenario(t, { requestTimeoutMs: 2000, slowHeaders: 200, slowBodies: 100, idle: 50, normalClients: 8, cutSlackMs: 3000, latencyFloorMs: 1000, latencyFactor: 10 }));
});
