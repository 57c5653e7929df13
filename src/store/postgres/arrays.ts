/**
 * Array parameters as PostgreSQL array literals, made here rather than by pg (lib/utils.js arrayString),
 * which turns every element into a string and runs two regex replaces and a quoting over it: on the
 * inventory catch-up's columns of tens of thousands of elements that was a sixth of its Node CPU.
 */

/** Integers (numbers, bigints or their decimal strings; null as NULL) for a `::integer[]`, `::smallint[]` or `::bigint[]` parameter. */
export function intArray(values: readonly (number | bigint | string | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    out += v === null ? 'NULL' : String(v);
  }
  return `${out}}`;
}

const NEEDS_ESCAPE = /[\\"]/;

/** Texts (null as NULL) for a `::text[]` parameter: each quoted, so no value reads as NULL, a separator or a brace. */
export function textArray(values: readonly (string | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    out += v === null ? 'NULL' : `"${NEEDS_ESCAPE.test(v!) ? v!.replace(/[\\"]/g, '\\$&') : v}"`;
  }
  return `${out}}`;
}
