/** The short run of test-reliability/crash.test.ts: a few kills per store. */
import { after, describe, it } from 'node:test';
import { crashScenario } from '../../test-reliability/scenarios/crash.js';
import { dropTargets, freshTarget } from '../../test-reliability/support/stores.js';
import { BACKENDS } from '../support/backends.js';

after(dropTargets);

describe('kill -9 under load (short)', () => {
  for (const backend of BACKENDS) {
    it(`${backend.name}: 4 kills lose, double and invent nothing`, { skip: backend.skip }, async (t) =>
      crashScenario(t, { target: await freshTarget(backend), kills: 4, killAfterMs: [200, 1000], connections: 32 }));
  }
});
