/**
 * Unknown extra fields are stored as JSON and given back as sent. JSON.parse reads numbers as IEEE
 * doubles, so a number a double cannot hold (an integer beyond ±2^53, or `1e400`, which reads as
 * Infinity and would be written back as `null`) would come back changed. Such a value is refused,
 * naming where it is, rather than stored altered.
 */
import { pointerToken } from './field-error.js';
import type { FieldError } from './field-error.js';

/** The first number under `value` that JSON cannot give back as sent, as a field error; undefined if none. */
export function inexactNumberError(value: unknown, path: string): FieldError | undefined {
  if (typeof value === 'number') {
    if (Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value))) return undefined;
    const what = Number.isFinite(value) ? 'an integer beyond ±2^53 (9007199254740991)' : 'a number beyond the range of a double (about ±1.8e308)';
    return {
      path,
      message: `${path} is ${what}: it cannot be stored exactly; send it as a string`,
      expected: 'a number within ±9007199254740991 if an integer, within ±1.8e308 otherwise, or a string',
      received: Number.isFinite(value) ? 'an integer beyond ±2^53' : 'a number out of range',
    };
  }
  if (typeof value !== 'object' || value === null) return undefined;
  // Depth is bounded by the caller (MAX_EXTRA_DEPTH) before this walk.
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const error = inexactNumberError(value[i], `${path}/${i}`);
      if (error !== undefined) return error;
    }
    return undefined;
  }
  for (const [key, member] of Object.entries(value)) {
    const error = inexactNumberError(member, `${path}/${pointerToken(key)}`);
    if (error !== undefined) return error;
  }
  return undefined;
}
