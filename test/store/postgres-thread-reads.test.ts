/**
 * The cost thread's PostgreSQL reads (store/postgres/thread-reads.ts) on a thread whose event loop a
 * pricing step holds for seconds: a connection being opened meanwhile must not fail for it.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openPostgresThreadReads } from '../../src/store/postgres/thread-reads.js';
import { BACKENDS, dropFreshStores } from '../support/backends.js';
import { scratchDatabase } from '../support/scratch.js';

/** Longer than the main pool's connect timeout (5 s): what a pricing step took on a loaded machine. */
const BUSY_MS = 6000;

describe('cost thread reads (postgres)', { skip: BACKENDS[1]!.skip }, () => {
  after(dropFreshStores);

  it('a connection opened while the event loop is busy past 5 s still answers', async () => {
    const { url } = await scratchDatabase();
    // The schema, as a server makes it before its cost thread starts.
    await (await openPostgresStore({ url })).close();
    const reads = openPostgresThreadReads({ url, foldBeforeReadMs: 20_000 });
    try {
      const version = reads.usage.version(1, 20_000);
      const started = Date.now();
      while (Date.now() - started < BUSY_MS);
      assert.deepEqual(await version, { events: 0n, rebuilds: 0n });
    } finally {
      await reads.close();
    }
  });
});
