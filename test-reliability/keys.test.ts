/** Keys and tenants on SQLite (one node + CLI) and PostgreSQL (two nodes), see scenarios/keys.ts. */
import { after, describe, it } from 'node:test';
import { BACKENDS } from '../test/support/backends.js';
import { KEYS_NODES, keysOptions, keysScenario } from './scenarios/keys.js';
import { dropTargets, requireBackend } from './support/stores.js';

after(dropTargets);

describe('keys and tenants', () => {
  for (const backend of BACKENDS) {
    it(`${backend.name}, ${KEYS_NODES[backend.name]} node(s): hashes only, revocation, rate limit, no key in logs, tenants apart`, async (t) => {
      requireBackend(backend);
      await keysScenario(t, await keysOptions(backend));
    });
  }
});
