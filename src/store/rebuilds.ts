import { MEASURE_COLUMNS, MEASURES, SHAPES } from '../usage/shapes.js';

/**
 * Rebuilds counted per tenant (DataVersion.rebuilds; the `rebuilds` table of migration 11 on both
 * backends): each rebuild adds one to its row in its own transaction.
 */

/** The tenant of the row that counts rebuilds of every tenant: it is added to each tenant's. */
export const EVERY_TENANT = 0;

/** What was rebuilt: a row each (migration 11 says why). */
export type RebuildKind = 'usage' | 'inventory';

/** Adds one to a row; parameters (tenant, kind) as `?` or `$1, $2`. */
export const countRebuildSql = (tenant: string, kind: string): string =>
  `INSERT INTO rebuilds (tenant, kind, generation) VALUES (${tenant}, ${kind}, 1) ON CONFLICT (tenant, kind) DO UPDATE SET generation = rebuilds.generation + 1`;

const TENANT_DAY = SHAPES.find((s) => s.name === 'tenant_day')!;
const REQUESTS_COLUMN = MEASURE_COLUMNS[MEASURES.indexOf('requests')]!;

/**
 * UsageStore.version in one statement (one snapshot): the tenant's events before a day and its
 * rebuilds, its own and every tenant's. A plain statement on both stores, not a pieced query: it spans
 * tenant_day from day 0, whose rows are few a day (provider × action), so one range scan is short.
 * Parameters as `?` (the tenant's twice) or `$n`; `cast` after each sum (PostgreSQL's are numeric).
 */
export const versionSql = (tenant: string, toDay: string, every: string, cast = ''): string =>
  `SELECT (SELECT coalesce(sum(u.${REQUESTS_COLUMN}), 0) FROM ${TENANT_DAY.table} u WHERE u.tenant = ${tenant} AND u.${TENANT_DAY.grain} < ${toDay})${cast},
  (SELECT coalesce(sum(generation), 0) FROM rebuilds WHERE tenant IN (${tenant}, ${every}))${cast}`;
