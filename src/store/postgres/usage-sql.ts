/**
 * PostgreSQL's usage SQL. Receipts are upserted in the statement or transaction that stores the
 * events they count; many processes upsert the same receipt rows at once, so rows carry a `shard`
 * (the backend's pid modulo SHARDS): concurrent transactions on different connections mostly update
 * different rows instead of queueing on one hot row until each other's COMMIT, and reads sum over
 * shards. The rollups are folded after commit (usage-fold.ts) from usage_outbox, one row per range of
 * seqs a transaction stored: a range lies within one sequence block, and a block is reserved by one
 * transaction only, so a row names exactly events that committed with it.
 */
import { FIRST_SHAPES, MEASURE_COLUMNS, MIGRATION_SHAPES, SHAPES, STORED_MEASURE_COLUMNS, WIDE_MEASURE_COLUMNS, keyColumns, keySql, measureSql, storedMeasureSql } from '../../usage/shapes.js';
import { addSetSql, splitNumericSql, wideColumnsMigrationSql } from '../wide.js';
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

/** A rollup table as migrations 4 and 8 created it (its byte measures' high parts came with migration 12). */
export function createShapeSql(shape: Shape): string {
  const keys = keyColumns(shape);
  const type = (c: string) => (c === 'action' ? 'smallint' : 'integer');
  return `CREATE TABLE ${shape.table} (
  ${keys.map((c) => `${c} ${type(c)} NOT NULL`).join(',\n  ')},
  shard smallint NOT NULL,
  ${MEASURE_COLUMNS.map((c) => `${c} bigint NOT NULL`).join(',\n  ')},
  PRIMARY KEY (${keys.join(', ')}, shard)
) WITH (fillfactor = 80);`;
}

/**
 * Adds the measures of `source`'s rows (events-shaped) matching `where` to the shape's rows, in shard 0:
 * rollups are written by one transaction at a time (the fold lock), so they need no sharding; rows
 * written in other shards before migration 6 are summed with it by every read. `narrow`: as the
 * migrations before 12 did, without the byte measures' high parts.
 */
export function rollupSql(shape: Shape, source: string, where = 'true', narrow = false): string {
  const keys = [...keyColumns(shape), 'shard'];
  const exprs = [...keySql(shape, EVENT_COLUMNS), '0::smallint'];
  const positions = exprs.map((_, i) => i + 1).join(', ');
  if (narrow) {
    return `INSERT INTO ${shape.table} (${[...keys, ...MEASURE_COLUMNS].join(', ')})
  SELECT ${[...exprs, ...measureSql(EVENT_COLUMNS)].join(', ')} FROM ${source} WHERE ${where}
  GROUP BY ${positions} ORDER BY ${positions}
  ON CONFLICT (${keys.join(', ')}) DO UPDATE SET ${MEASURE_COLUMNS.map((c) => `${c} = ${shape.table}.${c} + excluded.${c}`).join(', ')}`;
  }
  // Each row's byte sums whole, then split into canonical parts (wide.ts addSetSql): PostgreSQL's sum()
  // of bigints is numeric, exact however many events it adds, so no event's bytes need splitting. Half
  // the aggregates: a fold of the reference mix took 12.2 µs of PostgreSQL CPU per event against 13.0.
  const [requests, ...bytes] = measureSql(EVENT_COLUMNS);
  const measures = [requests!, ...bytes.map((x) => splitNumericSql(x)[0]), ...bytes.map((x) => splitNumericSql(x)[1])];
  return `INSERT INTO ${shape.table} (${[...keys, ...STORED_MEASURE_COLUMNS].join(', ')})
  SELECT ${[...exprs, ...measures].join(', ')} FROM ${source} WHERE ${where}
  GROUP BY ${positions} ORDER BY ${positions}
  ON CONFLICT (${keys.join(', ')}) DO UPDATE SET ${addSetSql(MEASURE_COLUMNS, WIDE_MEASURE_COLUMNS, `${shape.table}.`)}`;
}

/** The CTE adding receipts: `rows` gives (tenant, day, received, stored, rejected); duplicates are the rest. */
function receiptsUpsert(rows: string): string {
  return `receipts AS (
  INSERT INTO usage_receipts (tenant, day, shard, received, stored, duplicates, rejected)
  SELECT r.tenant, r.day, ${SHARD}, r.received, r.stored, r.received - r.rejected - r.stored, r.rejected FROM (${rows}) r
  -- In key order: two units never wait on each other's rows in opposite orders.
  ORDER BY 1, 2
  ON CONFLICT (tenant, day, shard) DO UPDATE SET received = usage_receipts.received + excluded.received,
    stored = usage_receipts.stored + excluded.stored, duplicates = usage_receipts.duplicates + excluded.duplicates,
    rejected = usage_receipts.rejected + excluded.rejected
)`;
}

/**
 * The statement path's receipts: parameters $p..$p+3 are (tenant, day, received, rejected) arrays per
 * tenant and arrival day; stored is counted from `source` (events-shaped rows).
 */
export function receiptsCte(source: string, p: number): string {
  return receiptsUpsert(`SELECT a.tenant, a.day, a.received, coalesce(k.n, 0) AS stored, a.rejected
    FROM unnest($${p}::integer[], $${p + 1}::integer[], $${p + 2}::bigint[], $${p + 3}::bigint[]) AS a(tenant, day, received, rejected)
    LEFT JOIN (SELECT tenant_id, received_at / 86400 AS day, count(*) AS n FROM ${source} GROUP BY 1, 2) k ON k.tenant_id = a.tenant AND k.day = a.day`);
}

const NOW = 'extract(epoch FROM now())::bigint';

/**
 * After COPY, in its transaction, as CTEs: the receipts, $1-$4 as receiptsCte's and $5 stored per row
 * (the caller knows which events it copied); and the outbox rows of the copied seq ranges ($6 tenant,
 * $7 first and $8 last seqs).
 */
export const USAGE_AFTER_COPY_CTES = `${receiptsUpsert('SELECT * FROM unnest($1::integer[], $2::integer[], $3::bigint[], $5::bigint[], $4::bigint[]) AS a(tenant, day, received, stored, rejected)')},
outbox AS (INSERT INTO usage_outbox (tenant, first_seq, last_seq, at) SELECT $6, f, l, ${NOW} FROM unnest($7::bigint[], $8::bigint[]) AS r(f, l))`;

/** The statement path's outbox rows: one per tenant and sequence block of `rows` (kept events, numbered n per tenant). */
export function usageOutboxCte(rows: string, block: number): string {
  return `usage_outbox_rows AS (INSERT INTO usage_outbox (tenant, first_seq, last_seq, at)
  SELECT tenant_id, min(seq), max(seq), ${NOW} FROM ${rows} GROUP BY tenant_id, (n - 1) / ${block})`;
}

/** The events columns EVENT_COLUMNS names: all a rollup reads of an events row. */
const FOLDED_COLUMNS = ['tenant_id', 'ts', 'action', 'bytes', 'is_billable_egress', ...Object.values(EVENT_COLUMNS.dims)].join(', ');

/**
 * One fold: the outbox rows with id <= $1, in id order, while the events of the rows before each stay
 * under $2; their events added to every shape (shard 0: only the holder of the fold lock writes
 * rollups) and the rows deleted, in one statement. Returns how many rows it took.
 */
export const FOLD_SQL = `WITH batch AS MATERIALIZED (
  SELECT id, tenant, first_seq, last_seq FROM (
    SELECT *, sum(last_seq - first_seq + 1) OVER (ORDER BY id) - (last_seq - first_seq + 1) AS before FROM usage_outbox WHERE id <= $1
  ) o WHERE before < $2
),
-- Each row's events by the (tenant_id, seq) index, fenced (OFFSET 0): as a join the planner hashed the
-- rows and read every event of the tenant, every fold (measured: 262 of a fold's 532 ms for 20,000
-- events among 220,000, 8 ms fenced). Only the columns the rollups read: the rows are kept for every shape's scan.
pending AS MATERIALIZED (
  SELECT e.* FROM batch b, LATERAL (
    SELECT ${FOLDED_COLUMNS} FROM events e WHERE e.tenant_id = b.tenant AND e.seq BETWEEN b.first_seq AND b.last_seq OFFSET 0
  ) e
),
${SHAPES.map((shape) => `usage_${shape.name} AS (${rollupSql(shape, 'pending')})`).join(',\n')},
done AS (DELETE FROM usage_outbox WHERE id IN (SELECT id FROM batch))
SELECT count(*)::integer AS n FROM batch`;

/**
 * The tenant $1's outbox rows (a read's CTE `pending`): in a statement's snapshot, its events stored
 * but not folded yet are exactly those they name (a fold adds events to the rollups and deletes their
 * rows in one statement). Usually none: reads fold first.
 */
export const PENDING_CTE = 'pending AS MATERIALIZED (SELECT first_seq, last_seq FROM usage_outbox WHERE tenant = $1)';

/**
 * Over an events row of tenant $1, beside PENDING_CTE: the rollups count it. A seq before every
 * pending row's first is folded without looking at the rows (an initplan, once per statement): the
 * anti join alone compared every event read with every pending row, and 1,000 rows pending made a
 * month by bucket 40–60 times slower (2.2 s against 51 ms at 54k events). The rows are looked at for the few events from the first on.
 */
export const FOLDED_SQL = `(seq < (SELECT coalesce(min(first_seq), 9223372036854775807) FROM pending)
  OR NOT EXISTS (SELECT 1 FROM pending p WHERE seq BETWEEN p.first_seq AND p.last_seq))`;

/** The measures per UTC day of a tenant's events stored but not folded yet ($1 tenant, days [$2, $3)). */
export const UNFOLDED_SQL = `SELECT e.ts / 86400, ${storedMeasureSql(EVENT_COLUMNS).map((m) => `(${m})::text`).join(', ')}
FROM usage_outbox o JOIN events e ON e.tenant_id = o.tenant AND e.seq BETWEEN o.first_seq AND o.last_seq
WHERE o.tenant = $1 AND e.ts >= $2::bigint * 86400 AND e.ts < $3::bigint * 86400 GROUP BY 1`;

/** Migration 6: the usage outbox. The rollups of an existing database are up to date, so it starts empty. */
export const USAGE_OUTBOX_MIGRATION_SQL = `
CREATE TABLE usage_outbox (
  id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  tenant integer NOT NULL,
  first_seq bigint NOT NULL,
  last_seq bigint NOT NULL,
  at bigint NOT NULL
);
`;

/** Migration 4: key scopes, rollups and receipts, filled from what is already stored. */
export function usageMigrationSql(): string {
  return `
ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'all';
${FIRST_SHAPES.map(createShapeSql).join('\n')}
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
${FIRST_SHAPES.map((shape) => rollupSql(shape, 'events', 'true', true) + ';').join('\n')}
-- Receipts before this version: what is stored and quarantined (duplicates were not counted then).
INSERT INTO usage_receipts (tenant, day, shard, received, stored, duplicates, rejected)
SELECT tenant, day, 0, sum(s) + sum(r), sum(s), 0, sum(r) FROM (
  SELECT tenant_id AS tenant, received_at / 86400 AS day, count(*) AS s, 0 AS r FROM events GROUP BY 1, 2
  UNION ALL
  SELECT tenant_id, received_at / 86400, 0, count(*) FROM quarantine GROUP BY 1, 2
) x GROUP BY tenant, day;
`;
}

/** Migration 8: the shapes added after migration 4, created and filled from the events stored. */
export function usageShapesMigrationSql(): string {
  const added = MIGRATION_SHAPES.filter((shape) => !FIRST_SHAPES.includes(shape));
  return added.map((shape) => `${createShapeSql(shape)}\n${rollupSql(shape, 'events', 'true', true)};`).join('\n');
}

/** Migration 12: the rollups' byte measures wide (store/wide.ts). */
export const WIDE_USAGE_MIGRATION_SQL = MIGRATION_SHAPES.map((shape) => wideColumnsMigrationSql(shape.table, WIDE_MEASURE_COLUMNS, 'bigint')).join('\n');
