/**
 * Exact decimal money. Amounts are computed with 100 significant digits, which keeps every product
 * of a price and an integer quantity exact; the one division (sharing an hour's cost out to keys)
 * is then rounded ONCE, half-even, to COST_PLACES places. A rational whose denominator is below
 * 10^40 cannot lie within 10^-100 of a rounding tie without being one, so the 100-digit
 * intermediate never changes the rounded result.
 */
import { Decimal } from 'decimal.js';

export const Dec = Decimal.clone({ precision: 100, rounding: Decimal.ROUND_HALF_EVEN, toExpNeg: -100, toExpPos: 100 });
export type Dec = InstanceType<typeof Dec>;

/** Places of every cost row (in the plan's currency); coarser rows are exact sums of these. */
export const COST_PLACES = 10;
/** Places of the informative quantity columns (not summed exactly). */
export const QUANTITY_PLACES = 15;

export const ZERO = new Dec(0);

export function dec(value: bigint | number | string): Dec {
  return new Dec(typeof value === 'bigint' ? value.toString() : value);
}

/** numerator × share / (denominator × total), rounded once to COST_PLACES. */
export function shareOf(numerator: Dec, share: bigint, denominator: bigint, total: bigint): Dec {
  return numerator.mul(dec(share)).div(dec(denominator * total)).toDecimalPlaces(COST_PLACES, Decimal.ROUND_HALF_EVEN);
}

export function fixed(value: Dec, places: number): string {
  return value.toFixed(places, Decimal.ROUND_HALF_EVEN);
}

/** Exact sum of decimal strings, written with COST_PLACES places. */
export function sumCosts(values: Iterable<string>): string {
  let total = ZERO;
  for (const v of values) total = total.add(v);
  return fixed(total, COST_PLACES);
}

/** A quantity column: at most QUANTITY_PLACES places, no trailing zeros. */
export function quantityText(value: Dec): string {
  return value.toDecimalPlaces(QUANTITY_PLACES, Decimal.ROUND_HALF_EVEN).toString();
}
