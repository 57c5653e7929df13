/**
 * A store read's timeout as the API's coded error: every 503 says when to come back (README,
 * "Errors": `503` and `429` carry `Retry-After`), whether the read waited on a backlog or on its budget.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BmError } from '../../src/errors.js';
import { asQueryTimeout } from '../../src/query/timed.js';
import { FoldBacklogError, ReadTimeoutError, SumOutOfRangeError } from '../../src/store/types.js';

describe('asQueryTimeout', () => {
  it('gives a read stopped at its budget a 503 with a Retry-After', () => {
    const mapped = asQueryTimeout(new ReadTimeoutError('the read took more than its budget of 2000 ms'));
    assert.ok(mapped instanceof BmError);
    assert.equal(mapped.code, 'BM_ERR_QUERY_TIMEOUT');
    assert.equal(mapped.extra.retryAfter, 5);
  });

  it('gives a read behind a fold backlog a 503 with a longer Retry-After', () => {
    const mapped = asQueryTimeout(new FoldBacklogError('usage is still being folded'));
    assert.ok(mapped instanceof BmError);
    assert.equal(mapped.code, 'BM_ERR_QUERY_TIMEOUT');
    assert.equal(mapped.extra.retryAfter, 10);
  });

  it('gives a read whose sums the store cannot add exactly a 422 of its own, never a 500', () => {
    const mapped = asQueryTimeout(new SumOutOfRangeError());
    assert.ok(mapped instanceof BmError);
    assert.equal(mapped.code, 'BM_ERR_SUM_TOO_LARGE');
    assert.equal(mapped.status, 422);
  });

  it('leaves any other error as it is', () => {
    const other = new Error('boom');
    assert.equal(asQueryTimeout(other), other);
  });
});
