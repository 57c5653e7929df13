/**
 * PostgreSQL's usage SQL. Rollups and receipts are upserted in the statement or transaction that
 * stores the events they count. Many processes upsert the same rows at once, so:
 * - each table's rows are upserted in key order (ORDER BY), so two units never wait on each other
 *   in opposite orders within a table (a deadlock across tables is retried with the unit);
 * - rows carry a `shard` (the backend's pid modulo SHARDS): concurrent transactions on different
 *   connections mostly update different rows, instead of queueing on one hot row (a tenant's
 *   current hour) until each other's COMMIT. Queries sum over shards.
 */
import { MEASURE_COLUMNS, SHAPES, keyColumns, keySql, measureSql } from '../../usage/shapes.js';
import type { EventColumns, Shape } from '../../usage/shapes.js';

const SHARDS = 16;
const SHARD = `(pg_backend_pid() % ${SHARDS})::smallint`;

export const EVENT_COLUMNS: EventColumns = {
  tenant: 'tenant_id',
  timestamp: 'ts',
  action: 'action',
  bytes: 'bytes',
  billable: 'coalesce(is_billable_egress, true)',
  dims: {
    provider: 'provider_id',
    bucket: 'bucket_id',
    customerId: 'customer_id',
    featureId: 'feature_id',
    clientType: 'client_type_id',
    clientId: 'client_id',
  },
};

function createShapeSql(shape: Shape): string {
  const keys = keyColumns(shape);
  const type = (c: string) => (c === 'action' ? 'smallint' : 'integer');
  return `CREATE TABLE ${shape.table} (
  ${keys.map((c) => `${c} ${type(c)} NOT NULL`).join(',\n  ')},
  shard smallint NOT NULL,
  ${MEASURE_COLUMNS.map((c) => `${c} bigint NOT NULL`).join(',\n  ')},
  PRIMARY KEY (${keys.join(', ')}, shard)
) WITH (fillfactor = 80);`;
}

/** Adds the measures of `source`'s rows (events-shaped) matching `where` to the shape's rows. */
export function rollupSql(shape: Shape, source: string, where = 'true', shard = SHARD): string {
  const keys = [...keyColumns(shape), 'shard'];
  const exprs = [...keySql(shape, EVENT_COLUMNS), shard];
  const positions = exprs.map((_, i) => i + 1).join(', ');
  return `INSERT INTO ${shape.table} (${[...keys, ...MEASURE_COLUMNS].join(', ')})
  SELECT ${[...exprs, ...measureSql(EVENT_COLUMNS)].join(', ')} FROM ${source} WHERE ${where}
  GROUP BY ${positions} ORDER BY ${positions}
  ON CONFLICT (${keys.join(', ')}) DO UPDATE SET ${MEASURE_COLUMNS.map((c) => `${c} = ${shape.table}.${c} + excluded.${c}`).join(', ')}`;
}

/**
 * CTEs adding `source`'s events to every shape, and the unit's receipts: parameters $p..$p+3 are
 * (tenant, day, received, rejected) arrays per tenant and arrival day; stored is counted from
 * `source`, duplicates are the rest.
 */
export function usageCtes(source: string, p: number): string {
  return [
    ...SHAPES.map((shape) => `usage_${shape.name} AS (${rollupSql(shape, source)})`),
    `receipts AS (
  INSERT INTO usage_receipts (tenant, day, shard, received, stored, duplicates, rejected)
  SELECT r.tenant, r.day, ${SHARD}, r.received, coalesce(k.n, 0), r.received - r.rejected - coalesce(k.n, 0), r.rejected
  FROM unnest($${p}::integer[], $${p + 1}::integer[], $${p + 2}::bigint[], $${p + 3}::bigint[]) AS r(tenant, day, received, rejected)
  LEFT JOIN (SELECT tenant_id, received_at / 86400 AS day, count(*) AS n FROM ${source} GROUP BY 1, 2) k ON k.tenant_id = r.tenant AND k.day = r.day
  ORDER BY 1, 2
  ON CONFLICT (tenant, day, shard) DO UPDATE SET received = usage_receipts.received + excluded.received,
    stored = usage_receipts.stored + excluded.stored, duplicates = usage_receipts.duplicates + excluded.duplicates,
    rejected = usage_receipts.rejected + excluded.rejected
)`,
  ].join(',\n');
}

/**
 * After COPY, in its transaction: the events just copied, found by their (tenant_id, seq) pairs
 * ($1, $2), read back while their pages are still in cache. Receipts $3-$6 as usageCtes says.
 */
export const USAGE_AFTER_COPY_SQL = `WITH copied AS MATERIALIZED (
  SELECT e.* FROM unnest($1::integer[], $2::bigint[]) AS c(tenant_id, seq) JOIN events e ON e.tenant_id = c.tenant_id AND e.seq = c.seq
),
${usageCtes('copied', 3)}
SELECT 1`;

/** Migration 4: key scopes, rollups and receipts, filled from what is already stored. */
export function usageMigrationSql(): string {
  return `
ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'all';
${SHAPES.map(createShapeSql).join('\n')}
CREATE TABLE usage_receipts (
  tenant integer NOT NULL,
  day integer NOT NULL,
  shard smallint NOT NULL,
  received bigint NOT NULL,
  stored bigint NOT NULL,
  duplicates bigint NOT NULL,
  rejected bigint NOT NULL,
  PRIMARY KEY (tenant, day, shard)
) WITH (fillfactor = 80);
${SHAPES.map((shape) => rollupSql(shape, 'events', 'true', '0::smallint') + ';').join('\n')}
-- Receipts before this version: what is stored and quarantined (duplicates were not counted then).
INSERT INTO usage_receipts (tenant, day, shard, received, stored, duplicates, rejected)
SELECT tenant, day, 0, sum(s) + sum(r), sum(s), 0, sum(r) FROM (
  SELECT tenant_id AS tenant, received_at / 86400 AS day, count(*) AS s, 0 AS r FROM events GROUP BY 1, 2
  UNION ALL
  SELECT tenant_id, received_at / 86400, 0, count(*) FROM quarantine GROUP BY 1, 2
) x GROUP BY tenant, day;
`;
}
