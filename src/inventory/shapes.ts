/**
 * The inventory's delta shapes, declared once for both stores: each is a table keyed by (tenant, hour
 * or UTC day, its dimensions) holding the six delta sums (timeline.ts DELTA_MEASURES). The full one,
 * `inventory_hours`, keeps every dimension (about a row per inventory event) and feeds the cost feed;
 * the coarser ones are its sums over fewer dimensions or per day, written in the same transaction, so
 * a storage read that groups and filters by few dimensions reads few rows. Sums are linear: a coarse
 * shape answers exactly what the full one would. A coarse row exists exactly where a full row with
 * its key does (a change writes the coarse rows of every full row it writes, zero sums included), so
 * an answer has the same groups from any shape. `planStorage` routes (docs: README "Stored bytes").
 */
import { KINDS } from '../events/catalogue.js';
import type { ActionName } from '../events/catalogue.js';
import type { InventoryDifference } from '../store/types.js';
import { DIMENSIONS, DIMENSION_COLUMN } from '../usage/shapes.js';
import type { Dimension } from '../usage/shapes.js';
import type { Attribution } from './timeline.js';
import { fromStored, highColumn, joinedSql, storedColumns, wideColumnsMigrationSql, widePositions } from '../store/wide.js';

/** The delta columns of every shape, in timeline.ts DELTA_MEASURES order. */
export const DELTA_COLUMNS = ['bytes', 'tail', 'objects', 'markers', 'unknown', 'part_bytes'] as const;

export type StorageGrain = 'hour' | 'day';

export interface StorageShape {
  name: string;
  table: string;
  /** Also the name of its time column: hours or UTC days since the epoch. */
  grain: StorageGrain;
  dimensions: readonly Dimension[];
}

/**
 * A day shape's seventh column: Σ bytes × the hours left in the UTC day after each delta's hour, so
 * that Σ bytes × (window end − hour − 1), what byte-hours need of each delta, is exact from days too:
 * it is `bytes_left + bytes × (window end − day end)`.
 */
export const BYTES_LEFT = 'bytes_left';

/** A shape's value columns: the deltas, and a day shape's BYTES_LEFT. */
export const valueColumns = (shape: StorageShape): string[] => (shape.grain === 'day' ? [...DELTA_COLUMNS, BYTES_LEFT] : [...DELTA_COLUMNS]);

/** The value columns summing bytes: kept wide (store/wide.ts), their sums unbounded (146 of the largest events in an hour pass 2^63 byte-seconds). */
export const WIDE_VALUE_COLUMNS = ['bytes', 'tail', 'part_bytes', BYTES_LEFT];

/** A shape's value columns as stored: valueColumns (the wide ones' low parts), then the wide ones' high parts. */
export const storedValueColumns = (shape: StorageShape): string[] => storedColumns(valueColumns(shape), WIDE_VALUE_COLUMNS);

/** Where a shape's wide columns are among its valueColumns (store/wide.ts toStored, fromStored). */
export const wideValuePositions = (shape: StorageShape): number[] => widePositions(valueColumns(shape), WIDE_VALUE_COLUMNS);

/**
 * Cheapest first (rows of 30 days at the bench's 1M events: 50 buckets, 1,000 customers; the full
 * one 568k):
 * - `tenant`: provider and action; totals and per-provider or per-kind charts (10k rows);
 * - `bucket`: provider and bucket; stored bytes per bucket (34k);
 * - `customer`: customer alone; stored bytes per customer (233k);
 * - `fine`: every dimension (`inventory_hours`); anything else, and the cost feed;
 * and per UTC day, for the whole days of long windows and of the opening (every delta before the
 * first window, which grows with the store's age): `tenant_day`, `bucket_day`, `customer_day` (30k).
 */
export const STORAGE_SHAPES: readonly StorageShape[] = [
  { name: 'tenant', table: 'inventory_tenant_hours', grain: 'hour', dimensions: ['provider', 'action'] },
  { name: 'bucket', table: 'inventory_bucket_hours', grain: 'hour', dimensions: ['provider', 'bucket'] },
  { name: 'customer', table: 'inventory_customer_hours', grain: 'hour', dimensions: ['customerId'] },
  { name: 'fine', table: 'inventory_hours', grain: 'hour', dimensions: DIMENSIONS },
  { name: 'tenant_day', table: 'inventory_tenant_days', grain: 'day', dimensions: ['provider', 'action'] },
  { name: 'bucket_day', table: 'inventory_bucket_days', grain: 'day', dimensions: ['provider', 'bucket'] },
  { name: 'customer_day', table: 'inventory_customer_days', grain: 'day', dimensions: ['customerId'] },
];

export const FINE_SHAPE = STORAGE_SHAPES.find((shape) => shape.name === 'fine')!;
/** The shapes derived from the full one: written beside it, filled and checked from it. */
export const COARSE_SHAPES = STORAGE_SHAPES.filter((shape) => shape !== FINE_SHAPE);

/** The cheapest shape of `grain` that keeps every dimension in `needed` (for hours, the full one keeps them all). */
export function storageShapeFor(needed: Iterable<Dimension>, grain: StorageGrain = 'hour'): StorageShape | undefined {
  const wanted = [...needed];
  return STORAGE_SHAPES.find((shape) => shape.grain === grain && wanted.every((d) => shape.dimensions.includes(d)));
}

/** Rows [from, to) of a shape (in its grain's units) that fold into window `window` (−1: the opening), which ends at hour `end`. */
export interface StorageSpan {
  window: number;
  from: number;
  to: number;
  end: number;
}

export interface StorageTerm {
  shape: StorageShape;
  spans: StorageSpan[];
}

/**
 * The shapes and spans that answer windows `bounds` (hours since the epoch) and their opening (every
 * hour before the first) exactly: the whole UTC days inside each from the cheapest day shape keeping
 * every dimension in `needed`, the hours around them from the cheapest such hourly shape. Only whole
 * days inside a window, never more taken away again: a group then has rows in a window exactly when
 * it has deltas in it. A window holding no whole UTC day (a day in another zone than UTC, an hour),
 * or `needed` no day shape keeps, is read by the hour.
 */
export function planStorage(needed: Iterable<Dimension>, bounds: readonly number[]): StorageTerm[] {
  const wanted = [...needed];
  const hourly = storageShapeFor(wanted, 'hour')!;
  const daily = storageShapeFor(wanted, 'day');
  const hours: StorageSpan[] = [];
  const days: StorageSpan[] = [];
  const add = (window: number, a: number, b: number, end: number) => {
    const first = Math.ceil(a / 24);
    const last = Math.floor(b / 24);
    if (daily === undefined || first >= last) {
      hours.push({ window, from: a, to: b, end });
      return;
    }
    days.push({ window, from: first, to: last, end });
    if (a < first * 24) hours.push({ window, from: a, to: first * 24, end });
    if (last * 24 < b) hours.push({ window, from: last * 24, to: b, end });
  };
  // The opening from the earliest hour a store can hold (epoch seconds in an integer hour column).
  add(-1, OPENING_FROM, bounds[0]!, bounds[0]!);
  for (let window = 0; window + 1 < bounds.length; window++) add(window, bounds[window]!, bounds[window + 1]!, bounds[window + 1]!);
  const terms: StorageTerm[] = [];
  if (days.length > 0) terms.push({ shape: daily!, spans: days });
  if (hours.length > 0) terms.push({ shape: hourly, spans: hours });
  return terms;
}

/** Before any hour a store holds (a multiple of 24): where the opening's span starts. */
export const OPENING_FROM = -24 * 1_000_000;

/**
 * A term's sums over its spans, as SQL aggregates over a shape's row `u` joined to a span `w` (its
 * window in `w.${window}`, −1 for the opening; its window's end in `w.${end}`), in StorageWindowSums
 * order: Σbytes, Σtail, Σbytes × (window end − hour − 1), Σobjects, Σmarkers, Σunknown, ΣpartBytes.
 * The opening's tail and weighted sums are 0 (it carries levels only): over every hour before the
 * first window they grow with the data's age (a few TB a day for two years pass 2^63 bytes × hours),
 * and summing them overflowed the stores' 64-bit integers, answering 500 for nothing used.
 */
export function sumsSql(shape: StorageShape, window: string, end: string, parts: boolean): string[] {
  const inWindow = (x: string) => `CASE WHEN w.${window} < 0 THEN 0 ELSE ${x} END`;
  // `parts`: each wide sum twice, over the low and the high parts (sumsOf joins them), a part times
  // hours far within 2^63; else the parts joined in SQL (wide.ts joinedSql), seven sums.
  const sums = (high: boolean) => {
    const c = (column: string) => (high ? `u.${highColumn(column)}` : parts || !WIDE_VALUE_COLUMNS.includes(column) ? `u.${column}` : joinedSql('u', column));
    const weighted = shape.grain === 'day' ? `${c(BYTES_LEFT)} + ${c('bytes')} * (w.${end} - 24 * u.day - 24)` : `${c('bytes')} * (w.${end} - u.hour - 1)`;
    return [c('bytes'), inWindow(c('tail')), inWindow(weighted), c('part_bytes')];
  };
  const [bytes, tail, weighted, partBytes] = sums(false);
  return [bytes!, tail!, weighted!, 'u.objects', 'u.markers', 'u.unknown', partBytes!, ...(parts ? sums(true) : [])].map((x) => `sum(${x})`);
}

/** Where sumsSql's wide sums are among the first seven (their high parts follow them). */
const WIDE_SUMS = [0, 1, 2, 6];

/** The seven sums (StorageWindowSums order) of sumsSql's columns read from `raw` at `at`. */
export const sumsOf = (raw: readonly bigint[], at: number): bigint[] => fromStored(raw, at, 7, WIDE_SUMS);

/** A shape's dimension columns, in its key's order. */
export const dimensionColumns = (shape: StorageShape): string[] => shape.dimensions.map((d) => DIMENSION_COLUMN[d]);

/** The full shape's dimension columns, in DIMENSIONS order. */
export const DIMENSION_COLUMNS = dimensionColumns(FINE_SHAPE);

/** A term's row: a window (−1: the opening), a group's dimension ids, and its sums (sumsSql). */
export interface TermRow {
  window: number;
  ids: number[];
  sums: bigint[];
}

/** Every term's rows added per window and group: a window's answer from days and hours. */
export function addTerms(rows: Iterable<TermRow>): TermRow[] {
  const out = new Map<string, TermRow>();
  for (const row of rows) {
    const key = `${row.window}/${row.ids.join('/')}`;
    const got = out.get(key);
    if (got === undefined) out.set(key, { window: row.window, ids: row.ids, sums: [...row.sums] });
    else for (let i = 0; i < row.sums.length; i++) got.sums[i]! += row.sums[i]!;
  }
  return [...out.values()];
}

/** A delta row as the stores write it (timeline.ts Deltas). */
export interface DeltaRow {
  hour: number;
  bucket: string;
  action: ActionName;
  attribution: Attribution;
  values: bigint[];
}

/** A delta row's dimension ids, in DIMENSIONS order (action: its code). */
export function dimensionIds(row: DeltaRow): number[] {
  const a = row.attribution;
  return [a.provider, Number(row.bucket), a.customer, a.feature, a.clientType, a.clientId, KINDS[row.action].code];
}

/** A shape row: its time (hours or days since the epoch), its dimension ids (shape order) and value columns. */
export interface ShapeRow {
  time: number;
  ids: number[];
  values: bigint[];
}

/**
 * Full rows (`ids` in DIMENSIONS order) summed into `shape`'s rows, in memory: what a change upserts
 * into a coarse shape (few rows), and what verify expects of it. Every full row makes its coarse row,
 * zero or not.
 */
export function project(shape: StorageShape, rows: Iterable<ShapeRow>): Map<string, ShapeRow> {
  const at = shape.dimensions.map((d) => DIMENSIONS.indexOf(d));
  const daily = shape.grain === 'day';
  const out = new Map<string, ShapeRow>();
  for (const row of rows) {
    const time = daily ? Math.floor(row.time / 24) : row.time;
    const values = daily ? [...row.values, row.values[0]! * BigInt(time * 24 + 23 - row.time)] : row.values;
    const ids = at.map((i) => row.ids[i]!);
    const key = [time, ...ids].join('/');
    const got = out.get(key);
    if (got === undefined) out.set(key, { time, ids, values: [...values] });
    else for (let i = 0; i < values.length; i++) got.values[i]! += values[i]!;
  }
  return out;
}

/** Each coarse shape's stored rows against the sums of the full shape's rows: every row missing, extra or different. */
export function compareShapes(tenantId: number, fine: ShapeRow[], stored: Map<StorageShape, ShapeRow[]>): InventoryDifference[] {
  const out: InventoryDifference[] = [];
  for (const shape of COARSE_SHAPES) {
    const want = project(shape, fine);
    for (const row of stored.get(shape) ?? []) {
      const key = [row.time, ...row.ids].join('/');
      const expected = want.get(key);
      want.delete(key);
      if (expected === undefined || expected.values.some((v, i) => v !== row.values[i])) {
        out.push({ tenantId, check: `${shape.name} ${shape.grain} ${key}`, expected: expected?.values.join(',') ?? 'absent', actual: row.values.join(',') });
      }
    }
    for (const [key, expected] of want) out.push({ tenantId, check: `${shape.name} ${shape.grain} ${key}`, expected: expected.values.join(','), actual: 'absent' });
  }
  return out;
}

/**
 * The migration step that fills each coarse shape from `inventory_hours` (both stores; `create`
 * gives a shape's CREATE TABLE in the store's dialect), as migration 10 did: before sums were wide.
 */
export function coarseShapesMigrationSql(create: (shape: StorageShape) => string): string {
  return COARSE_SHAPES.map((shape) => {
    const cols = dimensionColumns(shape).join(', ');
    const time = shape.grain === 'day' ? 'hour / 24' : 'hour';
    const left = shape.grain === 'day' ? [`sum(bytes * (hour / 24 * 24 + 23 - hour))`] : [];
    return `${create(shape)}
INSERT INTO ${shape.table} (tenant, ${shape.grain}, ${cols}, ${valueColumns(shape).join(', ')})
SELECT tenant, ${time}, ${cols}, ${[...DELTA_COLUMNS.map((c) => `sum(${c})`), ...left].join(', ')} FROM ${FINE_SHAPE.table} GROUP BY tenant, ${time}, ${cols};`;
  }).join('\n');
}

/** Migration 12 on both stores: every delta shape's wide columns given their high parts (store/wide.ts). */
export function wideShapesMigrationSql(type: string): string {
  return STORAGE_SHAPES.map((shape) => wideColumnsMigrationSql(shape.table, valueColumns(shape).filter((c) => WIDE_VALUE_COLUMNS.includes(c)), type)).join('\n');
}
