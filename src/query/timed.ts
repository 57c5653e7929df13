/** Store read errors that a client may retry, as the API's coded errors. */
import { BmError } from '../errors.js';
import { FoldBacklogError, ReadAbortedError, ReadTimeoutError, StoreUnavailableError, SumOutOfRangeError } from '../store/types.js';

/** When to ask again while the background jobs work off a backlog (they fold tens of thousands of events a second). */
const BACKLOG_RETRY_AFTER_SECONDS = 10;
/** When to ask again after a read stopped at its budget: most are stopped waiting for a busy reader thread. */
const READ_RETRY_AFTER_SECONDS = 5;
/** When to ask again while the database cannot be reached: as a commit refused for it (ingest/committer.ts). */
const STORE_RETRY_AFTER_SECONDS = 1;

/** A read stopped at its budget (no reader thread free in time, or a backlog to fold) is a 503 the caller may retry. */
export async function timed<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (err) {
    throw asQueryTimeout(err);
  }
}

/**
 * The BM_ERR_QUERY_TIMEOUT for a store's timeout (BM_ERR_SUM_TOO_LARGE for a sum it cannot add,
 * BM_ERR_STORE_UNAVAILABLE for a database it cannot reach), else the error itself. Also applied to
 * every error the HTTP layer answers (problem.ts) and the cost thread sends (worker.ts).
 */
export function asQueryTimeout(err: unknown): unknown {
  if (err instanceof FoldBacklogError) return new BmError('BM_ERR_QUERY_TIMEOUT', `${err.message}; retry shortly`, { retryAfter: BACKLOG_RETRY_AFTER_SECONDS }, { cause: err });
  // A 503 always says when to come back (README, "Errors"), this one included.
  if (err instanceof ReadTimeoutError) return new BmError('BM_ERR_QUERY_TIMEOUT', `${err.message}; narrow the query or retry later`, { retryAfter: READ_RETRY_AFTER_SECONDS }, { cause: err });
  if (err instanceof ReadAbortedError) return new BmError('BM_ERR_CLIENT_CLOSED', err.message, {}, { cause: err });
  // The database unreachable: a 503 to ask again, as for a write (README "Errors"), not a 500 (a bug).
  // The driver's message stays in the cause: it may name the database's host or user.
  if (err instanceof StoreUnavailableError) {
    return new BmError('BM_ERR_STORE_UNAVAILABLE', 'The database cannot be reached now: nothing was read. Retry after the Retry-After seconds.', { retryAfter: STORE_RETRY_AFTER_SECONDS }, { cause: err });
  }
  if (err instanceof SumOutOfRangeError) return new BmError('BM_ERR_SUM_TOO_LARGE', undefined, {}, { cause: err });
  return err;
}
