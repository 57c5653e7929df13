/**
 * What usage counts and the rollup shapes that keep it, declared once for both backends: each
 * shape is a table keyed by (tenant, hour, its dimensions), holding the four measures. Every shape
 * is hourly because day and month windows follow a time zone's midnight, which is only known at
 * query time; a shape leaves out dimensions instead. Shapes are listed cheapest first, and a query
 * goes to the first one that keeps every dimension it groups or filters by (docs: README "Usage").
 */
import { KINDS } from '../events/catalogue.js';

export const DIMENSIONS = ['provider', 'bucket', 'customerId', 'featureId', 'clientType', 'clientId', 'action'] as const;
export type Dimension = (typeof DIMENSIONS)[number];

export const MEASURES = ['requests', 'readBytes', 'billableEgressBytes', 'writtenBytes'] as const;
export type Measure = (typeof MEASURES)[number];

/** The column of each dimension in every rollup table (dictionary ids, 0 for none; action: its code). */
export const DIMENSION_COLUMN: Record<Dimension, string> = {
  provider: 'provider',
  bucket: 'bucket',
  customerId: 'customer',
  featureId: 'feature',
  clientType: 'client_type',
  clientId: 'client_id',
  action: 'action',
};

export const MEASURE_COLUMN: Record<Measure, string> = {
  requests: 'requests',
  readBytes: 'read_bytes',
  billableEgressBytes: 'egress_bytes',
  writtenBytes: 'written_bytes',
};

export interface Shape {
  name: string;
  table: string;
  dimensions: readonly Dimension[];
}

/**
 * - `tenant`: provider and action per hour: a few hundred rows a day, for totals and hourly charts.
 * - `customer`: without bucket and clientId, the two dimensions with thousands of values; what
 *   "usage per customer / feature / client type" needs, a small fraction of `fine`'s rows.
 * - `fine`: every dimension; only for queries that group or filter by bucket or clientId.
 */
export const SHAPES: readonly Shape[] = [
  { name: 'tenant', table: 'usage_tenant', dimensions: ['provider', 'action'] },
  { name: 'customer', table: 'usage_customer', dimensions: ['provider', 'customerId', 'featureId', 'clientType', 'action'] },
  { name: 'fine', table: 'usage_fine', dimensions: DIMENSIONS },
];

/** The cheapest shape that keeps every dimension in `needed`. */
export function shapeFor(needed: Iterable<Dimension>): Shape {
  const wanted = [...needed];
  return SHAPES.find((shape) => wanted.every((d) => shape.dimensions.includes(d)))!;
}

const GET = KINDS.GetObject.code;
/** Kinds whose `bytes` are written bytes (UploadPartCopy counts only when it carries bytes). */
const WRITES = [KINDS.PutObject.code, KINDS.PostObject.code, KINDS.UploadPart.code, KINDS.UploadPartCopy.code];

/** Column names of an events row (or of a row set shaped like one) in one backend. */
export interface EventColumns {
  tenant: string;
  timestamp: string;
  action: string;
  bytes: string;
  /** An SQL condition true when the event's egress is billable (absent counts as billable). */
  billable: string;
  /** Each dimension but action, as a dictionary id column. */
  dims: Record<Exclude<Dimension, 'action'>, string>;
}

/** The measures of a set of events rows, as SQL aggregates, in MEASURES order. */
export function measureSql(c: EventColumns): string[] {
  return [
    'count(*)',
    `sum(CASE WHEN ${c.action} = ${GET} THEN coalesce(${c.bytes}, 0) ELSE 0 END)`,
    `sum(CASE WHEN ${c.action} = ${GET} AND ${c.billable} THEN coalesce(${c.bytes}, 0) ELSE 0 END)`,
    `sum(CASE WHEN ${c.action} IN (${WRITES.join(', ')}) THEN coalesce(${c.bytes}, 0) ELSE 0 END)`,
  ];
}

/** A shape's key expressions over events rows: tenant, hour, then its dimensions (0 for none). */
export function keySql(shape: Shape, c: EventColumns): string[] {
  return [c.tenant, `${c.timestamp} / 3600`, ...shape.dimensions.map((d) => (d === 'action' ? c.action : `coalesce(${c.dims[d]}, 0)`))];
}

/** A shape's key columns in its table. */
export function keyColumns(shape: Shape): string[] {
  return ['tenant', 'hour', ...shape.dimensions.map((d) => DIMENSION_COLUMN[d])];
}

export const MEASURE_COLUMNS = MEASURES.map((m) => MEASURE_COLUMN[m]);
