/** The keys and tenants test of the full suite, as it is (it is short), but skipping PostgreSQL without TEST_DATABASE_URL. */
import { after, describe, it } from 'node:test';
import { KEYS_NODES, keysOptions, keysScenario } from '../../test-reliability/scenarios/keys.js';
import { dropTargets } from '../../test-reliability/support/stores.js';
import { BACKENDS } from '../support/backends.js';

after(dropTargets);

describe('keys and tenants (short)', () => {
  for (const backend of BACKENDS) {
    it(`${backend.name}, ${KEYS_NODES[backend.name]} node(s): hashes only, revocation, rate limit, no key in logs, tenants apart`, { skip: backend.skip }, async (t) =>
      keysScenario(t, await keysOptions(backend)));
  }
});
