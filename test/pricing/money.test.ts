/** The integer-unit money helpers the engine rounds with. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dec, divHalfEven, priceUnits, quantityText, shareUnits, sumCosts } from '../../src/pricing/money.js';

describe('money', () => {
  it('rounds half to even, and only ties', () => {
    assert.deepEqual([5n, 15n, 25n, 14n, 16n, -15n].map((n) => divHalfEven(n, 10n)), [0n, 2n, 2n, 1n, 2n, -2n]);
  });

  it('shares an amount in units of 10^-10: $1 three ways is 0.3333333333 each', () => {
    const amount = priceUnits(dec('1'));
    assert.equal(shareUnits(amount, 1n, 1n, 3n), 3333333333n);
    assert.equal(sumCosts(['0.3333333333', '0.3333333333', '0.3333333334']), '1.0000000000');
  });

  it('refuses a price finer than 15 places instead of rounding it silently', () => {
    assert.equal(priceUnits(dec('0.000000000000001')), 1n);
    assert.throws(() => priceUnits(dec('0.0000000000000001')), /more than 15 decimal places/);
  });

  it('writes quantities without trailing zeros', () => {
    assert.equal(quantityText(3n, 2n), '1.5');
    assert.equal(quantityText(10n, 5n), '2');
    assert.equal(quantityText(1n, 3n), '0.333333333333333');
  });
});
