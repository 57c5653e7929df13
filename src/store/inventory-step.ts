/**
 * The inventory's catch-up goes in steps: each applies the oldest outbox rows up to a span of seqs,
 * in a transaction of its own, so that its heap (the events it replays and the entries they touch)
 * stays bounded however large the backlog, and commits go on between steps. A row is never split:
 * the first row is taken whatever its span (the migration's row of a store's earlier events, once).
 */

/**
 * Seqs of pending events per step on SQLite (a group commit's rows are at most 10,000 each). A step
 * replays each key it touches once, from its earliest new event there, so a busy key's late events
 * cost less per event in larger steps: on the reference mix 150,000 took about half the CPU per event
 * of 50,000, for about 100 MiB more at the peak of a backlog's catch-up (docs/BENCHMARKS.md).
 */
export const CATCH_UP_SPAN = 150_000;

/**
 * The same on PostgreSQL, where a step is one transaction of the database that ingest commits to:
 * steps of 150,000 halved the drain's CPU there too, but slowed ingest beside them (0.60–0.71×
 * against 0.77–0.93× in the window, p99 doubled), so the steps stay at 50,000.
 */
export const POSTGRES_CATCH_UP_SPAN = 50_000;

/**
 * The step's rows in id order, in both stores' SQL: rows are taken while the seqs before them are
 * under the span (so the last one may take it past, by at most one row's). `span` and `upTo` are
 * placeholders: the span, and the last id the catch-up applies (the outbox's newest when it began,
 * so that a catch-up under ingest ends). Every row has a span of at least one, so the first `span`
 * rows hold the step. `pending`: a condition on the rows, where applied rows are kept a while (SQLite).
 */
export const outboxStepSql = (span: string, upTo: string, pending = 'true') => `SELECT tenant, first_seq, last_seq, id FROM (
  SELECT tenant, first_seq, last_seq, id, sum(last_seq - first_seq + 1) OVER (ORDER BY id) - (last_seq - first_seq + 1) AS before
  FROM (SELECT tenant, first_seq, last_seq, id FROM inventory_outbox WHERE id <= ${upTo} AND ${pending} ORDER BY id LIMIT ${span}) o
) s WHERE before < ${span}`;

/** A step's span as given to a store: a whole number of seqs, at least one (none would never end). */
export function checkedSpan(span: number): number {
  if (!Number.isSafeInteger(span) || span < 1) throw new RangeError(`the inventory catch-up's step must be at least one seq, not ${span}`);
  return span;
}
