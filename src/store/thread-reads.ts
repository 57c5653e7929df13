/** Opens a store's reads in another thread from the spec its store gave (Store.threadReads); a backend's code is loaded only when used. */
import type { CaughtUpFor, ThreadReads, ThreadReadsSpec } from './types.js';

export async function openThreadReads(spec: ThreadReadsSpec, caughtUp: (what: CaughtUpFor) => Promise<void>): Promise<ThreadReads> {
  if (spec.backend === 'postgres') {
    const { openPostgresThreadReads } = await import('./postgres/thread-reads.js');
    return openPostgresThreadReads(spec);
  }
  const { openSqliteThreadReads } = await import('./sqlite/thread-reads.js');
  return openSqliteThreadReads(spec, caughtUp);
}
