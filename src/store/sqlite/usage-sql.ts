/**
 * SQLite's usage SQL: the rollup tables, and the statements that fold events into them. The single
 * writer hands out seqs in commit order, so the counter `usage_seq` (the last seq folded, in the
 * derived file) is a feed that misses nothing: the derived thread folds the seqs after it in bounded
 * chunks, advancing it in the same transaction; a rebuild folds a time range after deleting its rollup rows. Both sum the events into
 * the stage (stageFromEvents) and add the stage to every shape (rollupFromStage), so they cannot
 * disagree; a fold of seqs the writer summed as it inserted them writes those sums instead
 * (usage-sums.ts), the same rows.
 */
import {
  DIMENSION_COLUMN, DIMENSIONS, FIRST_SHAPES, GRAIN_HOURS, MEASURE_COLUMNS, MIGRATION_SHAPES, STORED_MEASURE_COLUMNS, WIDE_MEASURE_COLUMNS, keyColumns, keySql, measureSql, storedMeasureSql,
} from '../../usage/shapes.js';
import { addSetSql, highColumn, splitSql, wideColumnsMigrationSql } from '../wide.js';
import type { EventColumns, Shape } from '../../usage/shapes.js';

export const EVENT_COLUMNS: EventColumns = {
  tenant: 'tenant',
  timestamp: 'timestamp',
  action: 'action',
  bytes: 'bytes',
  billable: 'coalesce(billable, 1) = 1',
  // SQLite's event columns have the names the rollup columns took from them.
  dims: Object.fromEntries(DIMENSIONS.filter((d) => d !== 'action').map((d) => [d, DIMENSION_COLUMN[d]])) as EventColumns['dims'],
};

/** A rollup table as migrations 4 and 8 created it (its byte measures' high parts came with migration 12). */
export function createShapeSql(shape: Shape): string {
  const keys = keyColumns(shape);
  return `CREATE TABLE ${shape.table} (
  ${[...keys, ...MEASURE_COLUMNS].map((c) => `${c} INTEGER NOT NULL`).join(',\n  ')},
  PRIMARY KEY (${keys.join(', ')})
) STRICT, WITHOUT ROWID;`;
}

/** Adds the measures of the events matching `where` (over `events`) to the shape's rows: the fill of the migrations before the rollups were wide. */
export function rollupFromEvents(shape: Shape, where: string): string {
  const keys = keyColumns(shape);
  const exprs = keySql(shape, EVENT_COLUMNS);
  return `INSERT INTO ${shape.table} (${[...keys, ...MEASURE_COLUMNS].join(', ')})
SELECT ${[...exprs, ...measureSql(EVENT_COLUMNS)].join(', ')} FROM events WHERE ${where}
GROUP BY ${exprs.map((_, i) => i + 1).join(', ')}
ON CONFLICT DO UPDATE SET ${MEASURE_COLUMNS.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')}`;
}

/**
 * The stage: events summed once per hour and every dimension, the finest grain, from which every
 * shape is summed in turn. Each shape used to read and sort the events itself, eight times per fold:
 * with traffic that repeats its dimensions (most of it), the stage is far smaller than the events
 * and seven of the eight sorts all but vanish; when every event is its own row it costs what the
 * eighth did. A connection's own temporary table, empty between transactions.
 */
const STAGE_KEYS = ['tenant', 'hour', ...DIMENSIONS.map((d) => DIMENSION_COLUMN[d])];

export const CREATE_STAGE = `CREATE TEMP TABLE IF NOT EXISTS usage_stage (${[...STAGE_KEYS, ...STORED_MEASURE_COLUMNS].map((c) => `${c} INTEGER NOT NULL`).join(', ')})`;

export const CLEAR_STAGE = 'DELETE FROM temp.usage_stage';

/**
 * Sums the events matching `where` into the stage (empty before). A stage row's byte measures are
 * worth low + high × 2^24 (wide.ts), as the rollups': `split`, each event's bytes are split (a rebuild
 * stages any number of events); else summed whole in the low column (a fold's chunk: at most
 * FOLD_CHUNK_EVENTS events of 2^44 bytes, within 2^58), which costs the fold a third less per event.
 */
export function stageFromEvents(where: string, split: boolean): string {
  const exprs = keySql({ grain: 'hour', dimensions: DIMENSIONS }, EVENT_COLUMNS);
  const measures = split ? storedMeasureSql(EVENT_COLUMNS) : [...measureSql(EVENT_COLUMNS), ...WIDE_MEASURE_COLUMNS.map(() => '0')];
  return `INSERT INTO temp.usage_stage (${[...STAGE_KEYS, ...STORED_MEASURE_COLUMNS].join(', ')})
SELECT ${[...exprs, ...measures].join(', ')} FROM events WHERE ${where}
GROUP BY ${exprs.map((_, i) => i + 1).join(', ')}`;
}

/**
 * Adds the stage's rows matching `where` (over the stage's columns) to the shape's rows, each byte
 * measure split again (its low sum's bits past 24 added to the high part): canonical parts (addSetSql).
 */
export function rollupFromStage(shape: Shape, where = 'true'): string {
  const keys = keyColumns(shape);
  const perUnit = GRAIN_HOURS[shape.grain];
  // Integer division of whole hours gives the UTC day, as timestamp / 86400 does.
  const exprs = ['tenant', perUnit === 1 ? 'hour' : `hour / ${perUnit}`, ...shape.dimensions.map((d) => DIMENSION_COLUMN[d])];
  const sums = [
    ...MEASURE_COLUMNS.map((c) => (WIDE_MEASURE_COLUMNS.includes(c) ? splitSql(`sum(${c})`)[0] : `sum(${c})`)),
    ...WIDE_MEASURE_COLUMNS.map((c) => `sum(${highColumn(c)}) + ${splitSql(`sum(${c})`)[1]}`),
  ];
  return `INSERT INTO ${shape.table} (${[...keys, ...STORED_MEASURE_COLUMNS].join(', ')})
SELECT ${[...exprs, ...sums].join(', ')} FROM temp.usage_stage WHERE ${where}
GROUP BY ${exprs.map((_, i) => i + 1).join(', ')}
ON CONFLICT DO UPDATE SET ${addSetSql(MEASURE_COLUMNS, WIDE_MEASURE_COLUMNS)}`;
}

/** Events stored but not folded yet: their seq is past the usage cursor. */
export const UNFOLDED = "seq > (SELECT value FROM derived_counters WHERE name = 'usage_seq')";

/** Events the rollups count: their seq is at most the usage cursor. */
export const FOLDED = "seq <= (SELECT value FROM derived_counters WHERE name = 'usage_seq')";

/** Migration 6: the usage cursor. The rollups of an existing database are up to date with every stored event. */
export const USAGE_CURSOR_MIGRATION_SQL = "INSERT INTO counters (name, value) SELECT 'usage_seq', value FROM counters WHERE name = 'event_seq';";

export const UPSERT_RECEIPTS = `INSERT INTO usage_receipts (tenant, day, received, stored, duplicates, rejected) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT DO UPDATE SET received = received + excluded.received, stored = stored + excluded.stored,
  duplicates = duplicates + excluded.duplicates, rejected = rejected + excluded.rejected`;

/** Migration 4: key scopes, rollups and receipts, filled from what is already stored. */
export function usageMigrationSql(): string {
  return `
ALTER TABLE api_keys ADD COLUMN scope TEXT NOT NULL DEFAULT 'all';
${FIRST_SHAPES.map(createShapeSql).join('\n')}
CREATE TABLE usage_receipts (
  tenant INTEGER NOT NULL,
  day INTEGER NOT NULL,
  received INTEGER NOT NULL,
  stored INTEGER NOT NULL,
  duplicates INTEGER NOT NULL,
  rejected INTEGER NOT NULL,
  PRIMARY KEY (tenant, day)
) STRICT, WITHOUT ROWID;
${FIRST_SHAPES.map((shape) => rollupFromEvents(shape, 'true') + ';').join('\n')}
-- Receipts before this version: what is stored and quarantined (duplicates were not counted then).
INSERT INTO usage_receipts (tenant, day, received, stored, duplicates, rejected)
SELECT tenant, day, sum(n), sum(s), 0, sum(r) FROM (
  SELECT tenant, (timestamp + received_after) / 86400 AS day, count(*) AS n, count(*) AS s, 0 AS r FROM events GROUP BY 1, 2
  UNION ALL
  SELECT tenant, received_at / 86400, count(*), 0, count(*) FROM quarantine GROUP BY 1, 2
) WHERE true GROUP BY tenant, day;
`;
}

/** Migration 8: the shapes added after migration 4, created and filled from the events stored. */
export function usageShapesMigrationSql(): string {
  const added = MIGRATION_SHAPES.filter((shape) => !FIRST_SHAPES.includes(shape));
  return added.map((shape) => `${createShapeSql(shape)}\n${rollupFromEvents(shape, 'true')};`).join('\n');
}

/** Migration 12: the rollups' byte measures wide (store/wide.ts). */
export const WIDE_USAGE_MIGRATION_SQL = MIGRATION_SHAPES.map((shape) => wideColumnsMigrationSql(shape.table, WIDE_MEASURE_COLUMNS, 'INTEGER')).join('\n');
