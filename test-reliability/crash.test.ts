/** kill -9 under load: 60 kills on SQLite, 50 on PostgreSQL (see scenarios/crash.ts). */
import { after, describe, it } from 'node:test';
import { BACKENDS } from '../test/support/backends.js';
import { crashScenario } from './scenarios/crash.js';
import { dropTargets, freshTarget, requireBackend } from './support/stores.js';

after(dropTargets);

const KILLS = { sqlite: 60, postgres: 50 };

describe('kill -9 under load', () => {
  for (const backend of BACKENDS) {
    it(`${backend.name}: ${KILLS[backend.name]} kills lose, double and invent nothing`, async (t) => {
      requireBackend(backend);
      await crashScenario(t, { target: await freshTarget(backend), kills: KILLS[backend.name], killAfterMs: [50, 1500], connections: 32 });
    });
  }
});
