/** Hostile input: 100,000 generated requests on SQLite, 20,000 on PostgreSQL (see scenarios/hostile.ts). */
import { after, describe, it } from 'node:test';
import { BACKENDS } from '../test/support/backends.js';
import { hostileScenario } from './scenarios/hostile.js';
import { MiB } from './support/measure.js';
import { dropTargets, freshTarget, requireBackend } from './support/stores.js';

after(dropTargets);

const SIZES = {
  sqlite: { requests: 100_000, raw: 5000, bigTimes: 3 },
  postgres: { requests: 20_000, raw: 1000, bigTimes: 2 },
};

describe('hostile input', () => {
  for (const backend of BACKENDS) {
    const size = SIZES[backend.name];
    it(`${backend.name}: ${size.requests} generated requests, ${size.raw} raw, 100 MB bodies and 1 GiB bombs`, async (t) => {
      requireBackend(backend);
      await hostileScenario(t, { target: await freshTarget(backend), ...size, bigBodyBytes: 100 * MiB, bombBytes: 1024 * MiB, maxRss: 512 * MiB, connections: 32 });
    });
  }
});
