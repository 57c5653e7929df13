/** What a PostgreSQL statement reads, from its plan as run. */
import type pg from 'pg';

/**
 * The events rows a statement scanned: EXPLAIN (ANALYZE) of it, summed over every scan of an events
 * partition (rows returned and removed by a filter, times loops; rows are per loop, rounded, so
 * within a tenth when loops return few rows each). Data-modifying statements run for real: call it
 * in a transaction rolled back after.
 */
export async function eventsRowsScanned(query: (config: pg.QueryConfig) => Promise<pg.QueryResult>, statement: pg.QueryConfig): Promise<number> {
  const { rows } = await query({ text: `EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF) ${statement.text}`, values: statement.values ?? [] });
  const scanned = (node: Record<string, unknown>): number =>
    (String(node['Relation Name'] ?? '').startsWith('events') ? ((node['Actual Rows'] as number) + ((node['Rows Removed by Filter'] as number | undefined) ?? 0)) * (node['Actual Loops'] as number) : 0) +
    ((node.Plans as Record<string, unknown>[] | undefined) ?? []).reduce((n, child) => n + scanned(child), 0);
  return scanned((rows[0]['QUERY PLAN'] as { Plan: Record<string, unknown> }[])[0]!.Plan);
}
