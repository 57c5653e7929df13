/**
 * What usage counts and the rollup shapes that keep it, declared once for both backends: each
 * shape is a table keyed by (tenant, hour or UTC day, its dimensions), holding the four measures.
 * Day and month windows follow a time zone's midnight, known only at query time, so hourly shapes
 * answer any window; a window's whole UTC days may instead come from a day shape, its edge hours
 * added or taken away from an hourly one (exact: the measures are sums). Shapes leave out
 * dimensions to stay small; `planUsage` routes a query to the cheapest shapes that keep every
 * dimension it groups or filters by, the events themselves (EVENTS) where no stored hourly shape
 * does (docs: README "Rollups: shapes and why").
 */
import { KINDS } from '../events/catalogue.js';
import { fromStored, joinedSql, splitSql, storedColumns, widePositions } from '../store/wide.js';

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

export const MEASURE_COLUMNS = MEASURES.map((m) => MEASURE_COLUMN[m]);

export type Grain = 'hour' | 'day';
/** Hours per unit of each grain; also the name of a shape's time column. */
export const GRAIN_HOURS: Record<Grain, number> = { hour: 1, day: 24 };

export interface Shape {
  name: string;
  table: string;
  grain: Grain;
  dimensions: readonly Dimension[];
}

const TENANT: Shape = { name: 'tenant', table: 'usage_tenant', grain: 'hour', dimensions: ['provider', 'action'] };
const CUSTOMER_HOUR: Shape = { name: 'customer_hour', table: 'usage_customer_hour', grain: 'hour', dimensions: ['customerId'] };
const DAY_SHAPES: readonly Shape[] = [
  { name: 'tenant_day', table: 'usage_tenant_day', grain: 'day', dimensions: ['provider', 'action'] },
  { name: 'customer_day', table: 'usage_customer_day', grain: 'day', dimensions: ['customerId'] },
  { name: 'feature_day', table: 'usage_feature_day', grain: 'day', dimensions: ['customerId', 'featureId', 'action'] },
  { name: 'client_day', table: 'usage_client_day', grain: 'day', dimensions: ['customerId', 'clientId'] },
];

/**
 * The stored rollups. Hourly, cheapest first:
 * - `tenant`: provider and action per hour: a few hundred rows a day, for totals and hourly charts.
 * - `customer_hour`: customer alone: hourly charts per customer, and the edge hours of `customer_day`.
 * Per UTC day, cheapest first, each for the questions asked most over days and months:
 * - `tenant_day`: provider and action (totals, daily charts);
 * - `customer_day`: customer (usage per customer and day);
 * - `feature_day`: customer, feature and action (what each customer's features do);
 * - `client_day`: customer and clientId (which clients of one customer).
 * Any other hourly question (bucket, client id, feature or client type per hour, provider beside a
 * customer) reads EVENTS: an hourly rollup keeping those dimensions held about a row per event of
 * the reference mix (`fine` and `customer`, dropped by migration 13), so it cost the fold ~8–10 µs
 * per event and saved a read nothing.
 */
export const SHAPES: readonly Shape[] = [TENANT, CUSTOMER_HOUR, ...DAY_SHAPES];

/**
 * Not a rollup: the events themselves, hourly, every dimension, read as if they were one (grouped by
 * hour and the query's dimensions, the folded events only, so that it counts what the rollups count).
 * The last resort of routing, and what costs read.
 */
export const EVENTS: Shape = { name: 'events', table: 'events', grain: 'hour', dimensions: DIMENSIONS };

/** Whether a term reads the events rather than a rollup (by name: terms cross to reader threads as copies). */
export const readsEvents = (shape: Shape): boolean => shape.name === EVENTS.name;

/** Hourly shapes migrations 4 to 12 kept, dropped by migration 13: those migrations still create and fill them. */
export const DROPPED_SHAPES: readonly Shape[] = [
  { name: 'customer', table: 'usage_customer', grain: 'hour', dimensions: ['provider', 'customerId', 'featureId', 'clientType', 'action'] },
  { name: 'fine', table: 'usage_fine', grain: 'hour', dimensions: DIMENSIONS },
];

/** Every shape migrations 4 to 12 knew, as they knew them. */
export const MIGRATION_SHAPES: readonly Shape[] = [TENANT, CUSTOMER_HOUR, ...DROPPED_SHAPES, ...DAY_SHAPES];

/** The shapes migration 4 created (migration 8 the rest of MIGRATION_SHAPES). */
export const FIRST_SHAPES = MIGRATION_SHAPES.filter((s) => ['tenant', 'customer', 'fine'].includes(s.name));

/** Migration 13: the hourly shapes that barely compressed, dropped (their queries read EVENTS). */
export const DROP_SHAPES_MIGRATION_SQL = DROPPED_SHAPES.map((s) => `DROP TABLE ${s.table};`).join('\n');

/**
 * The cheapest source of `grain` that keeps every dimension in `needed`: a stored shape, or for hours
 * and none stored, EVENTS. Day grain: a day shape or none.
 */
export function shapeFor(needed: Iterable<Dimension>, grain: Grain = 'hour'): Shape | undefined {
  const wanted = [...needed];
  const stored = SHAPES.find((shape) => shape.grain === grain && wanted.every((d) => shape.dimensions.includes(d)));
  return stored ?? (grain === 'hour' ? EVENTS : undefined);
}

/** Rows [from, to) of a shape (in its grain's units) added to (sign 1) or taken from (-1) window `window`. */
export interface UsageSpan {
  window: number;
  from: number;
  to: number;
  sign: 1 | -1;
}

export interface UsageTerm {
  shape: Shape;
  spans: UsageSpan[];
}

/**
 * The shapes and spans that answer windows `bounds` (hours since the epoch) exactly. A window
 * [a, b) reads the whole UTC days between the day boundaries nearest a and b from a day shape, and
 * the hours between each end and its nearest boundary from an hourly one, added when outside the
 * days and taken away when inside: a Berlin day is one UTC day plus one hour before it, minus its
 * own last hour. Windows shorter than a day, or with no day shape for `needed`, read hours only.
 * The hours come from EVENTS when no stored hourly shape keeps `needed`: a day term and its edge
 * hours then both count the folded events only (the stores' readers), one statement, one snapshot.
 */
export function planUsage(needed: Iterable<Dimension>, bounds: readonly number[]): UsageTerm[] {
  const wanted = [...needed];
  const hourly = shapeFor(wanted, 'hour')!;
  const daily = shapeFor(wanted, 'day');
  const hours: UsageSpan[] = [];
  const days: UsageSpan[] = [];
  const nearestDay = (h: number) => Math.round(h / 24);
  const edge = (window: number, from: number, to: number, sign: 1 | -1) => {
    if (from < to) hours.push({ window, from, to, sign });
  };
  for (let window = 0; window + 1 < bounds.length; window++) {
    const a = bounds[window]!;
    const b = bounds[window + 1]!;
    const first = nearestDay(a);
    const last = nearestDay(b);
    // Worth it only when the edges are fewer hours than the window itself.
    if (daily === undefined || first >= last || Math.abs(first * 24 - a) + Math.abs(b - last * 24) >= b - a) {
      hours.push({ window, from: a, to: b, sign: 1 });
      continue;
    }
    days.push({ window, from: first, to: last, sign: 1 });
    if (a < first * 24) edge(window, a, first * 24, 1);
    else edge(window, first * 24, a, -1);
    if (b > last * 24) edge(window, last * 24, b, 1);
    else edge(window, b, last * 24, -1);
  }
  const terms: UsageTerm[] = [];
  if (days.length > 0) terms.push({ shape: daily!, spans: days });
  if (hours.length > 0) terms.push({ shape: hourly, spans: hours });
  return terms;
}

/**
 * When every row of a one-term plan is one answer row: each window is one whole unit (a UTC day for
 * day windows, an hour for hourly ones), window w reading unit `first + w`, and each dimension the
 * shape keeps is grouped by or filtered to one value, so nothing is summed. Such a read needs no
 * GROUP BY (day windows of `customer_day` by customer: 30,000 rows a month; of `client_day` by client
 * for one customer).
 */
export function directWindows(
  terms: readonly UsageTerm[],
  groupBy: readonly Dimension[],
  filters: Partial<Record<Dimension, readonly string[]>>,
): { first: number; count: number } | undefined {
  if (terms.length !== 1) return undefined;
  const [{ shape, spans }] = terms as [UsageTerm];
  // The events: many rows per key.
  if (readsEvents(shape)) return undefined;
  if (!shape.dimensions.every((d) => groupBy.includes(d) || filters[d]?.length === 1)) return undefined;
  const first = spans[0]?.from;
  if (first === undefined || !spans.every((s, w) => s.window === w && s.sign === 1 && s.from === first + w && s.to === s.from + 1)) return undefined;
  return { first, count: spans.length };
}

const GET = KINDS.GetObject.code;
/** Kinds whose `bytes` are written bytes (UploadPartCopy counts only when it carries bytes). */
const WRITES: readonly number[] = [KINDS.PutObject.code, KINDS.PostObject.code, KINDS.UploadPart.code, KINDS.UploadPartCopy.code];

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

/** The measures of a set of events rows, as SQL aggregates, in MEASURES order: what the migrations that filled the rollups, before they were wide, summed. */
export function measureSql(c: EventColumns): string[] {
  return [
    'count(*)',
    `sum(CASE WHEN ${c.action} = ${GET} THEN coalesce(${c.bytes}, 0) ELSE 0 END)`,
    `sum(CASE WHEN ${c.action} = ${GET} AND ${c.billable} THEN coalesce(${c.bytes}, 0) ELSE 0 END)`,
    `sum(CASE WHEN ${c.action} IN (${WRITES.join(', ')}) THEN coalesce(${c.bytes}, 0) ELSE 0 END)`,
  ];
}

/**
 * The measures as the rollups store them (STORED_MEASURE_COLUMNS order), as SQL aggregates: each
 * event's bytes split (store/wide.ts), so that no sum passes 2^63 however many events of the largest
 * size a row holds.
 */
export function storedMeasureSql(c: EventColumns): string[] {
  const [, ...bytes] = eventMeasureSql(c, true);
  return ['count(*)', ...bytes.map((x) => `sum(${x})`)];
}

/**
 * One events row's measures, as a rollup row of it would hold them: `parts`, its stored columns
 * (STORED_MEASURE_COLUMNS order, the bytes split as the rollups keep them), else MEASURES order, the
 * bytes whole (a rollup row's joinedMeasureSql).
 */
export function eventMeasureSql(c: EventColumns, parts: boolean): string[] {
  const bytes = `coalesce(${c.bytes}, 0)`;
  const of = (when: string, x: string) => `CASE WHEN ${when} THEN ${x} ELSE 0 END`;
  const whens = [`${c.action} = ${GET}`, `${c.action} = ${GET} AND ${c.billable}`, `${c.action} IN (${WRITES.join(', ')})`];
  if (!parts) return ['1', ...whens.map((when) => of(when, bytes))];
  const [low, high] = splitSql(bytes);
  return ['1', ...whens.map((when) => of(when, low)), ...whens.map((when) => of(when, high))];
}

/** The byte measures: kept wide (store/wide.ts), their sums unbounded. */
export const WIDE_MEASURE_COLUMNS = MEASURE_COLUMNS.filter((c) => c !== 'requests');
/** The rollups' measure columns as stored: MEASURE_COLUMNS (the byte ones' low parts), then the byte ones' high parts. */
export const STORED_MEASURE_COLUMNS = storedColumns(MEASURE_COLUMNS, WIDE_MEASURE_COLUMNS);
const WIDE_AT = widePositions(MEASURE_COLUMNS, WIDE_MEASURE_COLUMNS);

/** The measures (MEASURES order) over a rollup row `alias`, the byte ones' parts joined in SQL (wide.ts joinedSql). */
export const joinedMeasureSql = (alias: string): string[] => MEASURE_COLUMNS.map((c) => (WIDE_MEASURE_COLUMNS.includes(c) ? joinedSql(alias, c) : `${alias}.${c}`));

/** The measures (MEASURES order) of stored columns' values read from `raw` at `at`. */
export const measuresOf = (raw: readonly bigint[], at: number): bigint[] => fromStored(raw, at, MEASURES.length, WIDE_AT);

/**
 * One event's measures added into `sums` from `at` (MEASURES order, the byte ones whole), as
 * measureSql's aggregates count them: the writer sums its events with this while it inserts them
 * (SQLite's usage-sums.ts). `billable` is the stored column (null when absent, which counts as billable).
 */
export function addMeasures(sums: Float64Array, at: number, action: number, bytes: number | null, billable: number | null): void {
  sums[at]! += 1;
  if (bytes === null) return;
  if (action === GET) {
    sums[at + 1]! += bytes;
    if (billable !== 0) sums[at + 2]! += bytes;
  } else if (WRITES.includes(action)) sums[at + 3]! += bytes;
}

/** A shape's key expressions over events rows: tenant, hour or day, then its dimensions (0 for none). */
export function keySql(shape: Pick<Shape, 'grain' | 'dimensions'>, c: EventColumns): string[] {
  return [c.tenant, `${c.timestamp} / ${GRAIN_HOURS[shape.grain] * 3600}`, ...shape.dimensions.map((d) => eventDimensionSql(c, d))];
}

/** A dimension of an events row as the rollups key it: its dictionary id, 0 for none; action: its code. */
export const eventDimensionSql = (c: EventColumns, d: Dimension): string => (d === 'action' ? c.action : `coalesce(${c.dims[d]}, 0)`);

/** A shape's key columns in its table. */
export function keyColumns(shape: Shape): string[] {
  return ['tenant', shape.grain, ...shape.dimensions.map((d) => DIMENSION_COLUMN[d])];
}

/**
 * The rows of `shape` that hours [fromHour, toHour) touch, in its grain's units, and the events
 * (epoch seconds) that fold into them: a day shape's whole days, so that a rebuild of part of a day
 * refills the whole day.
 */
export function shapeRange(shape: Shape, fromHour: number, toHour: number): { from: number; to: number; fromSecond: number; toSecond: number } {
  const unit = GRAIN_HOURS[shape.grain];
  const from = Math.floor(fromHour / unit);
  const to = Math.ceil(toHour / unit);
  return { from, to, fromSecond: from * unit * 3600, toSecond: to * unit * 3600 };
}
