/**
 * Exact money. Prices are decimal strings of at most 15 places (the schema's limit); decimal.js
 * parses them and multiplies them by integer quantities exactly, giving each slot's amount. That
 * amount, times 10^15, is an integer: sharing it out to keys is then pure BigInt arithmetic,
 * amount × share / (denominator × total), rounded ONCE, half-even, to COST_PLACES places. No
 * binary float and no intermediate rounding is ever involved.
 */
import { Decimal } from 'decimal.js';

export const Dec = Decimal.clone({ precision: 100, rounding: Decimal.ROUND_HALF_EVEN, toExpNeg: -100, toExpPos: 100 });
export type Dec = InstanceType<typeof Dec>;

/** Places of every cost row (in the plan's currency); coarser rows are exact sums of these. */
export const COST_PLACES = 10;
/** Places of the informative quantity columns (not summed exactly). */
export const QUANTITY_PLACES = 15;
/** Most decimal places of a price in a plan file. */
export const PRICE_PLACES = 15;

export const ZERO = new Dec(0);

export function dec(value: bigint | number | string): Dec {
  return new Dec(typeof value === 'bigint' ? value.toString() : value);
}

const SCALE = new Dec(10).pow(PRICE_PLACES);

/** An amount with at most PRICE_PLACES places, as an integer of 10^-PRICE_PLACES. */
export function priceUnits(amount: Dec): bigint {
  const units = amount.mul(SCALE);
  if (!units.isInteger()) throw new RangeError(`amount ${amount.toString()} has more than ${PRICE_PLACES} decimal places`);
  return BigInt(units.toFixed(0));
}

/** a / b rounded half-even to an integer (b > 0). */
export function divHalfEven(a: bigint, b: bigint): bigint {
  const negative = a < 0n;
  const n = negative ? -a : a;
  let q = n / b;
  const twice = 2n * (n % b);
  if (twice > b || (twice === b && q % 2n === 1n)) q += 1n;
  return negative ? -q : q;
}

const COST_DIVISOR = 10n ** BigInt(PRICE_PLACES - COST_PLACES);

/** amount (10^-15 units) × share / (denominator × total): integer units of 10^-COST_PLACES. */
export function shareUnits(amountUnits: bigint, share: bigint, denominator: bigint, total: bigint): bigint {
  return divHalfEven(amountUnits * share, denominator * total * COST_DIVISOR);
}

/** Integer units of 10^-places as a fixed-point string with exactly `places` places. */
export function unitsText(units: bigint, places: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(places + 1, '0');
  return `${negative ? '-' : ''}${digits.slice(0, -places)}.${digits.slice(-places)}`;
}

const QUANTITY_SCALE = 10n ** BigInt(QUANTITY_PLACES);

/** numerator / denominator as a quantity column: QUANTITY_PLACES places, no trailing zeros. */
export function quantityText(numerator: bigint, denominator: bigint): string {
  const text = unitsText(divHalfEven(numerator * QUANTITY_SCALE, denominator), QUANTITY_PLACES);
  return text.replace(/\.?0+$/, '');
}

/** A cost string (COST_PLACES places) as integer units. */
export function costUnits(text: string): bigint {
  const [whole, part = ''] = text.split('.');
  return BigInt(whole! + part.padEnd(COST_PLACES, '0'));
}

/** Exact sum of cost strings, written with COST_PLACES places. */
export function sumCosts(values: Iterable<string>): string {
  let total = 0n;
  for (const v of values) total += costUnits(v);
  return unitsText(total, COST_PLACES);
}
