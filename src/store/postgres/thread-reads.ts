/**
 * PostgreSQL reads of a thread of their own (the cost thread): a small pool of its own, each read
 * folding and applying what is pending first, as the store's reads do (any connection may).
 */
import type { ThreadReads } from '../types.js';
import { PostgresInventory } from './inventory.js';
import { createPool } from './pool.js';
import { guarded } from './store.js';
import { PostgresUsageReads } from './usage.js';
import { PostgresUsageFold } from './usage-fold.js';

/** One connection reads while another folds or applies for a second request. */
const POOL_MAX = 2;
/**
 * How long opening a connection may take. pg's timer runs on this thread's event loop, which a
 * pricing step holds for seconds of CPU (more on a loaded machine): past the main pool's 5 s, a
 * connection opened before such a step failed with the database fine, and the request with it
 * (BM_ERR_STORE_UNAVAILABLE; a 10M-event month on PostgreSQL at load 10–20, docs/BENCHMARKS.md). A
 * database refusing connections still fails at once; one that does not answer is waited for this
 * long, while the request is answered BM_ERR_COST_NOT_READY at its own bound.
 */
export const THREAD_CONNECT_TIMEOUT_MS = 120_000;

export function openPostgresThreadReads(spec: { url: string; foldBeforeReadMs: number }): ThreadReads {
  // Connections lost are the store's pool's to report: the same server, the same moment.
  const pool = createPool({ url: spec.url, max: POOL_MAX, connectTimeoutMs: THREAD_CONNECT_TIMEOUT_MS });
  const reads = new PostgresUsageReads(pool, guarded);
  const fold = new PostgresUsageFold(pool, guarded);
  return {
    usage: {
      query: async (tenantId, query) => {
        await fold.catchUp(Date.now() + spec.foldBeforeReadMs);
        return reads.query(tenantId, query);
      },
      version: async (tenantId, toDay) => {
        await fold.catchUp(Date.now() + spec.foldBeforeReadMs);
        return reads.version(tenantId, toDay);
      },
    },
    storage: new PostgresInventory(pool, guarded, spec.foldBeforeReadMs),
    close: () => pool.end(),
  };
}
