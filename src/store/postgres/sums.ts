/** PostgreSQL's sums checked: exact, or SumOutOfRangeError for the tenant's read (types.ts). */
import { DatabaseError } from 'pg';
import { SumOutOfRangeError } from '../types.js';

/**
 * `read`, its "out of range" (22003: sum() of bigint is numeric, but a bigint product in one row past
 * 64 bits is refused) as SumOutOfRangeError. Outside `guarded`, which takes any other error for the
 * store's unavailability.
 */
export async function inRange<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (err) {
    if (err instanceof DatabaseError && err.code === '22003') throw new SumOutOfRangeError();
    throw err;
  }
}
