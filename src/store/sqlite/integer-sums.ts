/** SQLite's sums checked: exact integers, or SumOutOfRangeError for the tenant's read (types.ts). */
import { SumOutOfRangeError } from '../types.js';

/**
 * The rows `read` gives (a statement with safe integers: every integer a bigint). SQLite's sum() of
 * integers past 64 bits throws "integer overflow", and a product past them turns into a float, as
 * does any sum holding it: either is a sum the store cannot give exactly.
 */
export function integerSums<R extends readonly unknown[]>(read: () => R[]): R[] {
  let rows: R[];
  try {
    rows = read();
  } catch (err) {
    if (err instanceof Error && err.message === 'integer overflow') throw new SumOutOfRangeError();
    throw err;
  }
  for (const row of rows) for (const v of row) if (typeof v === 'number') throw new SumOutOfRangeError();
  return rows;
}

/**
 * integerSums row by row, as SQLite gives them (a statement's iterate): each row is garbage once
 * used, where a large read's rows all read first outlived young collections (a month's at 3M events).
 */
export function* integerRows<R extends readonly unknown[]>(rows: Iterable<R>): Generator<R> {
  try {
    for (const row of rows) {
      for (const v of row) if (typeof v === 'number') throw new SumOutOfRangeError();
      yield row;
    }
  } catch (err) {
    if (err instanceof Error && err.message === 'integer overflow') throw new SumOutOfRangeError();
    throw err;
  }
}
