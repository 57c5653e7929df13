/** Building usage answers as columns (UsageColumns), shared by both stores and the service. */
import { actionByCode } from '../events/catalogue.js';
import { MEASURES } from '../usage/shapes.js';
import type { Dimension } from '../usage/shapes.js';
import type { UsageColumns, UsageStoreRow } from './types.js';

/** Rows as the stores read them: dictionary ids per dimension (0 for none; action: its code). */
export interface IdColumns {
  length: number;
  window: Int32Array;
  ids: Int32Array[];
  /** BigInt64Array, or bigint[] once a value past 64 bits is set (setMeasure). */
  measures: (BigInt64Array | bigint[])[];
}

export function idColumns(groupBy: readonly Dimension[], length: number): IdColumns {
  return {
    length,
    window: new Int32Array(length),
    ids: groupBy.map(() => new Int32Array(length)),
    measures: MEASURES.map(() => new BigInt64Array(length)),
  };
}

/** The rows at `length`: the first `length` of them, or all and room after (columns filled as rows are read). */
export function resized(rows: IdColumns, length: number): IdColumns {
  const copy = <T extends Int32Array | BigInt64Array>(a: T): T => {
    const b = new (a.constructor as new (n: number) => T)(length);
    b.set(a.subarray(0, Math.min(a.length, length)) as never);
    return b;
  };
  return {
    length,
    window: copy(rows.window),
    ids: rows.ids.map(copy),
    // A column past 64 bits is an array: it grows as it is set.
    measures: rows.measures.map((m) => (m instanceof BigInt64Array ? copy(m) : m.slice(0, length))),
  };
}

/**
 * Sets a row's measure. A column given a value past 64 bits becomes a bigint[] (a BigInt64Array
 * would keep it modulo 2^64: a wrong figure): byte sums are wide (store/wide.ts), their totals unbounded.
 */
export function setMeasure(rows: IdColumns, m: number, i: number, value: bigint): void {
  let column = rows.measures[m]!;
  if (column instanceof BigInt64Array && BigInt.asIntN(64, value) !== value) {
    column = Array.from(column);
    rows.measures[m] = column;
  }
  column[i] = value;
}

/** The dictionary ids the rows name (actions are codes, not dictionary ids). */
export function dictionaryIds(groupBy: readonly Dimension[], rows: IdColumns): number[] {
  const ids = new Set<number>();
  groupBy.forEach((d, g) => {
    if (d === 'action') return;
    for (const id of rows.ids[g]!) if (id !== 0) ids.add(id);
  });
  return [...ids];
}

/** Replaces ids by indexes into per-dimension labels (`names`: dictionary id to value). */
export function labelled(groupBy: readonly Dimension[], rows: IdColumns, names: Map<number, string>): UsageColumns {
  const labels: (string | null)[][] = [];
  groupBy.forEach((d, g) => {
    const column = rows.ids[g]!;
    const index = new Map<number, number>();
    const list: (string | null)[] = [];
    for (let i = 0; i < rows.length; i++) {
      const id = column[i]!;
      let k = index.get(id);
      if (k === undefined) {
        k = list.length;
        index.set(id, k);
        list.push(d === 'action' ? (actionByCode(id) ?? null) : id === 0 ? null : names.get(id)!);
      }
      column[i] = k;
    }
    labels.push(list);
  });
  return { length: rows.length, window: rows.window, values: rows.ids, labels, measures: rows.measures };
}

/** The buffers to transfer (not copy) when posting columns to another thread. */
export function columnBuffers(columns: UsageColumns): ArrayBuffer[] {
  const typed = [columns.window, ...columns.values, ...columns.measures.filter((m) => m instanceof BigInt64Array)];
  return typed.map((t) => t.buffer as ArrayBuffer);
}

/** Rows of columns, for the few callers that want objects (storage merging, cost pricing). */
export function columnRows(columns: UsageColumns): UsageStoreRow[] {
  const rows: UsageStoreRow[] = [];
  for (let i = 0; i < columns.length; i++) {
    rows.push({
      window: columns.window[i]!,
      values: columns.values.map((v, g) => columns.labels[g]![v[i]!]!),
      measures: columns.measures.map((m) => m[i]!),
    });
  }
  return rows;
}

/** Columns of rows (measures kept as bigint arrays: any size). */
export function rowColumns(groupBy: readonly Dimension[], rows: readonly UsageStoreRow[], measures: number): UsageColumns {
  const labels = groupBy.map(() => new Map<string | null, number>());
  const values = groupBy.map(() => new Int32Array(rows.length));
  const window = new Int32Array(rows.length);
  const sums = Array.from({ length: measures }, () => new Array<bigint>(rows.length));
  rows.forEach((row, i) => {
    window[i] = row.window;
    row.values.forEach((v, g) => {
      let k = labels[g]!.get(v);
      if (k === undefined) {
        k = labels[g]!.size;
        labels[g]!.set(v, k);
      }
      values[g]![i] = k;
    });
    for (let m = 0; m < measures; m++) sums[m]![i] = row.measures[m]!;
  });
  return { length: rows.length, window, values, labels: labels.map((l) => [...l.keys()]), measures: sums };
}
