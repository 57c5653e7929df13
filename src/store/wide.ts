/**
 * Sums that can pass 2^63, kept in two 64-bit integer columns: `c` and `c_hi`, worth c + c_hi × 2^24.
 * Each added value goes in split (its low 24 bits to `c`, the rest to `c_hi`), so both columns grow
 * by less than 2^24 per value added: neither passes 2^63 before 2^39 additions to one row, and a read
 * may multiply a row's parts by a window's hours and sum them over millions of rows, in SQL on either
 * store, without passing it either. One event's bytes are at most 2^44, but their sums are not bounded:
 * 2^19 such events in one hour (one key can send them) passed 2^63 in a rollup row, 146 in an hour's
 * byte-seconds, and a petabyte held for months in the byte-hours of a read; the store's 64-bit
 * integers then refused the write, stopping every tenant's fold or catch-up, or the read.
 * Reads join the parts in SQL while the value fits 64 bits (joinedSql), else in JS as bigints.
 */

const LOW_BITS = 24;
const LOW_MASK = (1 << LOW_BITS) - 1;

/** The column holding a wide column's high part. */
export const highColumn = (column: string): string => `${column}_hi`;

/** A wide value's parts as SQL over an integer expression: [low, high]. */
export const splitSql = (x: string): [string, string] => [`((${x}) & ${LOW_MASK})`, `((${x}) >> ${LOW_BITS})`];

/**
 * A non-negative PostgreSQL numeric's parts as SQL bigints, [low, high]: as splitSql's, for sums past
 * 2^63 (bytes are never negative, so truncating division is the floor splitSql's shift is).
 */
export const splitNumericSql = (x: string): [string, string] => [`mod(${x}, ${LOW_MASK + 1})::bigint`, `div(${x}, ${LOW_MASK + 1})::bigint`];

/**
 * A wide column's value as one SQL integer over row `alias`: exact while it fits 64 bits; past them a
 * float (SQLite) or "out of range" (PostgreSQL), which the readers take for SumOutOfRangeError and read
 * again in parts. Reads try this first: one sum per measure, not two (a read of every measure in parts
 * took 1.3 to 2 times as long).
 */
export const joinedSql = (alias: string, column: string): string => `(${alias}.${column} + ${alias}.${highColumn(column)} * ${LOW_MASK + 1})`;

/** A value's parts: [low, high]. */
export const split = (v: bigint): [bigint, bigint] => [v & BigInt(LOW_MASK), v >> BigInt(LOW_BITS)];

/** The value of its parts. */
export const join = (low: bigint, high: bigint): bigint => low + (high << BigInt(LOW_BITS));

/**
 * An upsert's SET adding `excluded`'s values to the row's (`target.` before the row's columns where
 * the dialect needs it): each wide column's parts kept canonical, the low one in [0, 2^24), so that a
 * value has the same parts however it was added (a fold's chunks, a rebuild at once).
 */
export function addSetSql(columns: readonly string[], wide: readonly string[], target = ''): string {
  return columns
    .flatMap((c) => {
      if (!wide.includes(c)) return [`${c} = ${target}${c} + excluded.${c}`];
      const [low, high] = splitSql(`${target}${c} + excluded.${c}`);
      return [`${c} = ${low}`, `${highColumn(c)} = ${target}${highColumn(c)} + excluded.${highColumn(c)} + ${high}`];
    })
    .join(', ');
}

/**
 * The stored columns of `columns` (each wide one's low part in its place), then the high parts of the
 * wide ones, in their order.
 */
export function storedColumns(columns: readonly string[], wide: readonly string[]): string[] {
  return [...columns, ...columns.filter((c) => wide.includes(c)).map(highColumn)];
}

/** Positions in `columns` of the wide ones, in order (what `toStored` and `fromStored` take). */
export const widePositions = (columns: readonly string[], wide: readonly string[]): number[] =>
  columns.flatMap((c, i) => (wide.includes(c) ? [i] : []));

/** Values (storedColumns' first part order) as the stored columns' values: low parts in place, high parts after. */
export function toStored(values: readonly bigint[], positions: readonly number[]): bigint[] {
  const out = [...values];
  for (const p of positions) {
    const [low, high] = split(values[p]!);
    out[p] = low;
    out.push(high);
  }
  return out;
}

/** The values of stored columns read from `raw` at `at` (values.length + positions.length of them). */
export function fromStored(raw: readonly bigint[], at: number, count: number, positions: readonly number[]): bigint[] {
  const out = raw.slice(at, at + count);
  positions.forEach((p, k) => {
    out[p] = join(out[p]!, raw[at + count + k]!);
  });
  return out;
}

/**
 * A migration step giving a table's wide columns their high parts: each added (0), and every value
 * not already a low part split, so that old rows meet the bound new ones do (a single row's value,
 * a petabyte, times a window's hours would pass 2^63). Both stores' SQL.
 */
export function wideColumnsMigrationSql(table: string, wide: readonly string[], type: string): string {
  const add = wide.map((c) => `ALTER TABLE ${table} ADD COLUMN ${highColumn(c)} ${type} NOT NULL DEFAULT 0;`);
  const set = wide.map((c) => `${highColumn(c)} = ${splitSql(c)[1]}, ${c} = ${splitSql(c)[0]}`).join(', ');
  const where = wide.map((c) => `${c} < 0 OR ${c} > ${LOW_MASK}`).join(' OR ');
  return `${add.join('\n')}\nUPDATE ${table} SET ${set} WHERE ${where};`;
}
