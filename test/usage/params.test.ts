/**
 * from and to of usage, cost and reconcile requests are on whole hours (or UTC midnights): a fraction
 * of a second past one is refused, naming the parameter, not dropped (the answer would then have
 * left out the events of that fraction, stored by their second: an approximate answer).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BmError } from '../../src/errors.js';
import { parseRangeParams, parseUsageParams } from '../../src/usage/params.js';

const refused = (run: () => unknown, paths: string[]) =>
  assert.throws(run, (err: unknown) => {
    assert.ok(err instanceof BmError);
    assert.equal(err.code, 'BM_ERR_QUERY_INVALID');
    assert.deepEqual(err.extra.errors?.map((e) => e.path), paths);
    return true;
  });

describe('usage parameters: from and to on whole hours, to the fraction of a second', () => {
  it('refuses a fraction past the hour, and takes a zero one', () => {
    refused(() => parseUsageParams({ from: '2026-03-01T00:00:00.001Z', to: '2026-03-01T01:00:00.5Z' }), ['/from', '/to']);
    const whole = parseUsageParams({ from: '2026-03-01T00:00:00.000Z', to: '2026-03-01T01:00:00.0+00:00' });
    assert.deepEqual([whole.from, whole.to], [Date.UTC(2026, 2, 1) / 1000, Date.UTC(2026, 2, 1, 1) / 1000]);
  });

  it('reconcile: a fraction past UTC midnight is refused too', () => {
    refused(() => parseRangeParams({ from: '2026-03-01T00:00:00Z', to: '2026-03-02T00:00:00.25Z' }), ['/to']);
    assert.equal(parseRangeParams({ from: '2026-03-01T00:00:00Z', to: '2026-03-02T00:00:00.00Z' }).to, Date.UTC(2026, 2, 2) / 1000);
  });
});
