/** Usage reads on PostgreSQL: routed rollup queries and reconcile figures (folding and rebuilds: usage-fold.ts). */
import type { Pool, PoolClient } from 'pg';
import { isActionName, KINDS } from '../../events/catalogue.js';
import {
  DIMENSION_COLUMN, GRAIN_HOURS, MEASURE_COLUMNS, MEASURES, SHAPES, STORED_MEASURE_COLUMNS, WIDE_MEASURE_COLUMNS, directWindows, eventDimensionSql, eventMeasureSql, joinedMeasureSql, measuresOf, readsEvents, storedMeasureSql,
} from '../../usage/shapes.js';
import { highColumn } from '../wide.js';
import type { Dimension } from '../../usage/shapes.js';
import { SumOutOfRangeError } from '../types.js';
import type { DataVersion, UsageColumns, UsageDayCheck, UsageStoreQuery } from '../types.js';
import { EVERY_TENANT, versionSql } from '../rebuilds.js';
import { dictionaryIds, idColumns, labelled, setMeasure } from '../usage-columns.js';
import { DayChecks } from '../usage-days.js';
import { CancellableReads } from './cancellable.js';
import { fromPgText, toPgText } from './encode.js';
import { EVENT_COLUMNS, FOLDED_SQL, PENDING_CTE, UNFOLDED_SQL } from './usage-sql.js';
import { inRange } from './sums.js';

type Guard = <T>(run: () => Promise<T>) => Promise<T>;

const VERSION_SQL = versionSql('$1', '$2', '$3', '::text');
const SUMS = STORED_MEASURE_COLUMNS.map((c) => `sum(u.${c})::text`).join(', ');

/**
 * The events of span w (the tenant $1's, folded only) as rollup rows of their own: each dimension
 * grouped or filtered under its rollup column's name, the measures as the rollups hold them (`parts`:
 * the stored columns, else the bytes whole in the low columns, high parts 0), so that a term over
 * them is summed as one over a rollup. The range is on ts itself: the (tenant_id, ts) index, and the
 * partitions pruned. OFFSET 0 keeps it a subquery run per span: pulled up into the join (as it was
 * with FOLDED_SQL's initplan) it read every event of the tenant in every partition, 400 ms for a
 * month of 55k events among 200k against 35 ms.
 */
function eventsAsRollupRows(groupBy: readonly Dimension[], filters: readonly [Dimension, number[]][], parts: boolean): string {
  const dims = [...new Set([...groupBy, ...filters.map(([d]) => d)])].map((d) => `${eventDimensionSql(EVENT_COLUMNS, d)} AS ${DIMENSION_COLUMN[d]}`);
  const measures = eventMeasureSql(EVENT_COLUMNS, parts);
  const columns = parts ? STORED_MEASURE_COLUMNS : MEASURE_COLUMNS;
  const high = parts ? [] : WIDE_MEASURE_COLUMNS.map((c) => `0::bigint AS ${highColumn(c)}`);
  const where = filters.map(([d, ids]) => ` AND ${eventDimensionSql(EVENT_COLUMNS, d)} IN (${ids.join(', ')})`).join('');
  return `SELECT ${[...dims, ...measures.map((x, m) => `(${x})::bigint AS ${columns[m]}`), ...high].join(', ')} FROM events
    WHERE tenant_id = $1 AND ts >= w.s::bigint * 3600 AND ts < w.e::bigint * 3600 AND ${FOLDED_SQL}${where} OFFSET 0`;
}

export class PostgresUsageReads {
  constructor(
    private readonly pool: Pool,
    private readonly guarded: Guard,
    private readonly reads = new CancellableReads(pool),
  ) {}

  async query(tenantId: number, q: UsageStoreQuery, signal?: AbortSignal): Promise<UsageColumns> {
    this.reads.check(signal);
    const filters: [Dimension, number[]][] = [];
    for (const [dimension, values] of Object.entries(q.filters) as [Dimension, string[]][]) {
      const ids = await this.#filterIds(dimension, values);
      if (ids.length === 0) return labelled(q.groupBy, idColumns(q.groupBy, 0), new Map());
      filters.push([dimension, ids]);
    }
    // The byte measures' parts joined in SQL; a product past 64 bits is read again in parts (wide.ts).
    try {
      return await this.#query(tenantId, q, filters, false, signal);
    } catch (err) {
      if (!(err instanceof SumOutOfRangeError)) throw err;
      return this.#query(tenantId, q, filters, true, signal);
    }
  }

  async #query(tenantId: number, q: UsageStoreQuery, filters: [Dimension, number[]][], parts: boolean, signal: AbortSignal | undefined): Promise<UsageColumns> {
    const measures = (alias: string) => (parts ? STORED_MEASURE_COLUMNS.map((c) => `${alias}.${c}`) : joinedMeasureSql(alias));
    const where = filters.map(([d, ids]) => `u.${DIMENSION_COLUMN[d]} IN (${ids.join(', ')})`);
    const direct = directWindows(q.terms, q.groupBy, q.filters);
    if (direct !== undefined) {
      const { shape } = q.terms[0]!;
      const { first, count } = direct;
      // The range bounds the index scan (with the list alone the planner scanned the tenant's every
      // day); the list lets a filtered dimension after the time column narrow it. In key order (no
      // sort), so that a key's rows in other shards (written before migration 6) come together and
      // are summed as they are read: a GROUP BY here hashed the rows and spilled to disk (46 ms for
      // 28k rows against 21 ms in key order, 5 ms with no aggregate).
      const order = [shape.grain, ...shape.dimensions.map((d) => DIMENSION_COLUMN[d])].map((c) => `u.${c}`).join(', ');
      const text = `SELECT u.${shape.grain}${q.groupBy.map((d) => `, u.${DIMENSION_COLUMN[d]}`).join('')}, ${measures('u').map((x) => `${x}::text`).join(', ')}
        FROM ${shape.table} u WHERE u.tenant = $1 AND u.${shape.grain} >= $2 AND u.${shape.grain} < $3 AND u.${shape.grain} = ANY($4::integer[])${where.map((c) => ` AND ${c}`).join('')}
        ORDER BY ${order}`;
      const { rows: raw } = await inRange(this.guarded(() => this.reads.query<unknown[]>({ text, values: [tenantId, first, first + count, Array.from({ length: count }, (_, w) => first + w)], rowMode: 'array' }, signal)));
      return this.#columns(q, raw, first, parts);
    }
    const groups = q.groupBy.map((d) => `, x.${DIMENSION_COLUMN[d]}`).join('');
    const keys = q.groupBy.map((_, g) => `, g${g}`).join('');
    const values: unknown[] = [tenantId];
    // Each span is one range scan of the (tenant, hour or day) key (LATERAL: joining a list of
    // windows plainly made the planner rescan the tenant's rows once per window: 18 s for the 744
    // hourly windows of a cost read at 200k rows). A term's rows are signed (an edge hour may be
    // taken away), then summed.
    const terms = q.terms.map((term) => {
      const p = values.length + 1;
      values.push(...['window', 'from', 'to', 'sign'].map((f) => term.spans.map((s) => s[f as keyof typeof s])));
      const rows = readsEvents(term.shape)
        ? eventsAsRollupRows(q.groupBy, filters, parts)
        : `SELECT u.* FROM ${term.shape.table} u WHERE u.tenant = $1 AND u.${term.shape.grain} >= w.s AND u.${term.shape.grain} < w.e${where.map((c) => ` AND ${c}`).join('')}`;
      return `SELECT w.i${groups}, ${measures('x').map((x) => `w.k * ${x}`).join(', ')}
  FROM unnest($${p}::integer[], $${p + 1}::integer[], $${p + 2}::integer[], $${p + 3}::integer[]) AS w(i, s, e, k)
  CROSS JOIN LATERAL (${rows}) x`;
    });
    // Only the events folded (FOLDED_SQL): the tenant's outbox rows, in the statement's snapshot, name those that are not.
    const pending = q.terms.some((term) => readsEvents(term.shape)) ? `WITH ${PENDING_CTE} ` : '';
    const count = parts ? STORED_MEASURE_COLUMNS.length : MEASURES.length;
    const sums = Array.from({ length: count }, (_, m) => m);
    const sql = `${pending}SELECT i${keys}, ${sums.map((m) => `sum(m${m})::text`).join(', ')}
      FROM (${terms.join('\nUNION ALL\n')}) AS t(i${keys}, ${sums.map((m) => `m${m}`).join(', ')})
      GROUP BY i${keys}`;
    const { rows: raw } = await inRange(this.guarded(() => this.reads.query<unknown[]>({ text: sql, values, rowMode: 'array' }, signal)));
    return this.#columns(q, raw, 0, parts);
  }

  /**
   * Raw rows (their window, or unit: the window plus `first`; the groups; the measures as text) as
   * columns, a row with the same window and groups as the row before added to it: a direct read's
   * rows of one key in several shards (grouped reads have no such neighbours).
   */
  async #columns(q: UsageStoreQuery, raw: unknown[][], first: number, parts: boolean): Promise<UsageColumns> {
    const n = q.groupBy.length;
    const rows = idColumns(q.groupBy, raw.length);
    let i = 0;
    for (const row of raw) {
      const window = (row[0] as number) - first;
      const same = i > 0 && rows.window[i - 1] === window && rows.ids.every((ids, g) => ids[i - 1] === row[1 + g]);
      const at = same ? i - 1 : i++;
      rows.window[at] = window;
      for (let g = 0; g < n; g++) rows.ids[g]![at] = row[1 + g] as number;
      const values = row.slice(1 + n).map((x) => BigInt(x as string));
      const measures = parts ? measuresOf(values, 0) : values;
      for (let m = 0; m < MEASURES.length; m++) setMeasure(rows, m, at, measures[m]! + (same ? rows.measures[m]![at]! : 0n));
    }
    const measures = rows.measures.map((m) => (m instanceof BigInt64Array ? m.subarray(0, i) : m.slice(0, i)));
    const kept = { length: i, window: rows.window.subarray(0, i), ids: rows.ids.map((ids) => ids.subarray(0, i)), measures };
    return labelled(q.groupBy, kept, await this.#values(dictionaryIds(q.groupBy, kept)));
  }

  /**
   * The tenant's events before `toDay` and its rebuilds, its own and every tenant's
   * (UsageStore.version): one statement, one round trip for every usage and cost answer's version.
   */
  async version(tenantId: number, toDay: number, signal?: AbortSignal): Promise<DataVersion> {
    this.reads.check(signal);
    const { rows } = await this.guarded(() => this.reads.query<[string, string]>({ text: VERSION_SQL, values: [tenantId, toDay, EVERY_TENANT], rowMode: 'array' }, signal));
    return { events: BigInt(rows[0]![0]), rebuilds: BigInt(rows[0]![1]) };
  }

  /** In one REPEATABLE READ transaction: receipts, events, rollups and the unfolded events from the same snapshot. */
  reconcile(tenantId: number, fromDay: number, toDay: number, signal?: AbortSignal): Promise<UsageDayCheck[]> {
    this.reads.check(signal);
    return inRange(this.guarded(async () => {
      const client = await this.pool.connect();
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const days = await this.#reconcile(client, tenantId, fromDay, toDay);
        await client.query('COMMIT');
        client.release();
        return days;
      } catch (err) {
        client.release(true);
        throw err;
      }
    }));
  }

  async #reconcile(client: PoolClient, tenantId: number, fromDay: number, toDay: number): Promise<UsageDayCheck[]> {
    const days = new DayChecks();
    const range = [tenantId, fromDay, toDay];
    const all = (text: string) => client.query<string[]>({ text, values: range, rowMode: 'array' }).then((r) => r.rows);
    for (const [day, ...r] of await all(`SELECT day, sum(received)::text, sum(stored)::text, sum(duplicates)::text, sum(rejected)::text
      FROM usage_receipts WHERE tenant = $1 AND day >= $2 AND day < $3 GROUP BY 1`)) {
      const [received, stored, duplicates, rejected] = r.map(BigInt);
      days.at(day!).receipts = { received: received!, stored: stored!, duplicates: duplicates!, rejected: rejected! };
    }
    const measures = storedMeasureSql(EVENT_COLUMNS).map((m) => `(${m})::text`).join(', ');
    for (const [day, ...m] of await all(`SELECT ts / 86400, ${measures} FROM events
      WHERE tenant_id = $1 AND ts >= $2::bigint * 86400 AND ts < $3::bigint * 86400 GROUP BY 1`)) {
      days.at(day!).events = measuresOf(m.map(BigInt), 0);
    }
    for (const [day, n] of await all(`SELECT received_at / 86400, count(*)::text FROM events
      WHERE tenant_id = $1 AND received_at >= $2::bigint * 86400 AND received_at < $3::bigint * 86400 GROUP BY 1`)) {
      days.at(day!).storedByArrival = BigInt(n!);
    }
    for (const shape of SHAPES) {
      const perDay = 24 / GRAIN_HOURS[shape.grain];
      const t = shape.grain;
      for (const [day, ...m] of await all(`SELECT u.${t} / ${perDay}, ${SUMS} FROM ${shape.table} u
        WHERE u.tenant = $1 AND u.${t} >= $2 * ${perDay} AND u.${t} < $3 * ${perDay} GROUP BY 1`)) {
        days.at(day!).rollups[shape.name] = measuresOf(m.map(BigInt), 0);
      }
    }
    for (const [day, ...m] of await all(UNFOLDED_SQL)) days.unfolded(day!, measuresOf(m.map(BigInt), 0));
    return days.list();
  }

  async #filterIds(dimension: Dimension, values: string[]): Promise<number[]> {
    if (dimension === 'action') return values.filter(isActionName).map((name) => KINDS[name].code);
    const ids = values.includes('') ? [0] : [];
    const named = values.filter((v) => v !== '').map(toPgText);
    if (named.length > 0) {
      const { rows } = await this.guarded(() => this.pool.query<{ id: number }>('SELECT id FROM dict WHERE value = ANY($1::text[])', [named]));
      for (const { id } of rows) ids.push(id);
    }
    return ids;
  }

  async #values(ids: number[]): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    if (ids.length === 0) return out;
    const { rows } = await this.guarded(() => this.pool.query<{ id: number; value: string }>('SELECT id, value FROM dict WHERE id = ANY($1::integer[])', [ids]));
    for (const { id, value } of rows) out.set(id, fromPgText(value));
    return out;
  }
}
