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
