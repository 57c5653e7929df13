/**
 * The inventory's hourly delta shapes, declared once for both stores: each is a table keyed by
 * (tenant, hour, its dimensions) holding the six delta sums (timeline.ts DELTA_MEASURES). The full
 * one, `inventory_hours`, keeps every dimension (about a row per inventory event) and feeds the cost
 * feed; the coarser ones are its sums over fewer dimensions, written in the same transaction, so a
 * storage read that groups and filters by few dimensions reads few rows. Sums are linear: a coarse
 * shape answers exactly what the full one would. A coarse row exists exactly where a full row with
 * its key does (a change writes the coarse rows of every full row it writes, zero sums included), so
 * an answer has the same groups from any shape. `storageShapeFor` routes (docs: README "Stored bytes").
 */
import { KINDS } from '../events/catalogue.js';
import type { ActionName } from '../events/catalogue.js';
import type { InventoryDifference } from '../store/types.js';
import { DIMENSIONS, DIMENSION_COLUMN } from '../usage/shapes.js';
import type { Dimension } from '../usage/shapes.js';
import type { Attribution } from './timeline.js';

/** The delta columns of every shape, in timeline.ts DELTA_MEASURES order. */
export const DELTA_COLUMNS = ['bytes', 'tail', 'objects', 'markers', 'unknown', 'part_bytes'] as const;

export interface StorageShape {
  name: string;
  table: string;
  dimensions: readonly Dimension[];
}

/**
 * Cheapest first (rows per hour at the bench's mix: 50 buckets, 1,000 customers):
 * - `tenant`: provider and action; totals and per-provider or per-kind charts (tens of rows an hour);
 * - `bucket`: provider and bucket; stored bytes per bucket;
 * - `customer`: customer alone; stored bytes per customer;
 * - `fine`: every dimension (`inventory_hours`); anything else, and the cost feed.
 */
export const STORAGE_SHAPES: readonly StorageShape[] = [
  { name: 'tenant', table: 'inventory_tenant_hours', dimensions: ['provider', 'action'] },
  { name: 'bucket', table: 'inventory_bucket_hours', dimensions: ['provider', 'bucket'] },
  { name: 'customer', table: 'inventory_customer_hours', dimensions: ['customerId'] },
  { name: 'fine', table: 'inventory_hours', dimensions: DIMENSIONS },
];

export const FINE_SHAPE = STORAGE_SHAPES[STORAGE_SHAPES.length - 1]!;
/** The shapes derived from the full one: written beside it, filled and checked from it. */
export const COARSE_SHAPES = STORAGE_SHAPES.slice(0, -1);

/** The cheapest shape that keeps every dimension in `needed` (the full one keeps them all). */
export function storageShapeFor(needed: Iterable<Dimension>): StorageShape {
  const wanted = [...needed];
  return STORAGE_SHAPES.find((shape) => wanted.every((d) => shape.dimensions.includes(d)))!;
}

/** A shape's dimension columns, in its key's order. */
export const dimensionColumns = (shape: StorageShape): string[] => shape.dimensions.map((d) => DIMENSION_COLUMN[d]);

/** The full shape's dimension columns, in DIMENSIONS order. */
export const DIMENSION_COLUMNS = dimensionColumns(FINE_SHAPE);

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

/** A shape row: its hour (hours since the epoch), its dimension ids (shape order) and delta sums. */
export interface ShapeRow {
  hour: number;
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
  const out = new Map<string, ShapeRow>();
  for (const row of rows) {
    const ids = at.map((i) => row.ids[i]!);
    const key = [row.hour, ...ids].join('/');
    const got = out.get(key);
    if (got === undefined) out.set(key, { hour: row.hour, ids, values: [...row.values] });
    else for (let i = 0; i < row.values.length; i++) got.values[i]! += row.values[i]!;
  }
  return out;
}

/** Each coarse shape's stored rows against the sums of the full shape's rows: every row missing, extra or different. */
export function compareShapes(tenantId: number, fine: ShapeRow[], stored: Map<StorageShape, ShapeRow[]>): InventoryDifference[] {
  const out: InventoryDifference[] = [];
  for (const shape of COARSE_SHAPES) {
    const want = project(shape, fine);
    for (const row of stored.get(shape) ?? []) {
      const key = [row.hour, ...row.ids].join('/');
      const expected = want.get(key);
      want.delete(key);
      if (expected === undefined || expected.values.some((v, i) => v !== row.values[i])) {
        out.push({ tenantId, check: `${shape.name} hour ${key}`, expected: expected?.values.join(',') ?? 'absent', actual: row.values.join(',') });
      }
    }
    for (const [key, expected] of want) out.push({ tenantId, check: `${shape.name} hour ${key}`, expected: expected.values.join(','), actual: 'absent' });
  }
  return out;
}

/**
 * The migration step that fills each coarse shape from `inventory_hours` (both stores; `create`
 * gives a shape's CREATE TABLE in the store's dialect).
 */
export function coarseShapesMigrationSql(create: (shape: StorageShape) => string): string {
  return COARSE_SHAPES.map((shape) => {
    const cols = dimensionColumns(shape).join(', ');
    return `${create(shape)}
INSERT INTO ${shape.table} (tenant, hour, ${cols}, ${DELTA_COLUMNS.join(', ')})
SELECT tenant, hour, ${cols}, ${DELTA_COLUMNS.map((c) => `sum(${c})`).join(', ')} FROM ${FINE_SHAPE.table} GROUP BY tenant, hour, ${cols};`;
  }).join('\n');
}
