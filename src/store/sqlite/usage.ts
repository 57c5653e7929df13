/** Usage reads on a reader thread's connection: routed rollup queries (as columns) and the reconcile figures. */
import type { Statement } from 'better-sqlite3';
import { isActionName, KINDS } from '../../events/catalogue.js';
import {
  DIMENSION_COLUMN, GRAIN_HOURS, MEASURES, SHAPES, STORED_MEASURE_COLUMNS, directWindows, eventDimensionSql, eventMeasureSql, joinedMeasureSql, measuresOf, readsEvents, storedMeasureSql,
} from '../../usage/shapes.js';
import type { Dimension, Grain, Shape, UsageSpan } from '../../usage/shapes.js';
import { SumOutOfRangeError } from '../types.js';
import type { DataVersion, UsageColumns, UsageDayCheck, UsageStoreQuery } from '../types.js';
import { EVERY_TENANT, versionSql } from '../rebuilds.js';
import { dictionaryIds, idColumns, labelled, resized, setMeasure } from '../usage-columns.js';
import type { Connection } from './connection.js';
import { EVENT_COLUMNS, FOLDED, UNFOLDED } from './usage-sql.js';
import { DayChecks } from '../usage-days.js';
import { integerRows, integerSums } from './integer-sums.js';

const STATEMENT_CACHE = 200;

/**
 * A span is scanned in pieces of at most a day, each a range seek of its own, so that a query over
 * months stops within a day's rows of its caller leaving (bm_check runs once per piece).
 */
const PIECE_UNITS: Record<Grain, number> = { hour: 24, day: 1 };

const VERSION_SQL = versionSql('?', '?', '?');

function pieces(s: UsageSpan, units: number): [number, number, number, number][] {
  const out: [number, number, number, number][] = [];
  for (let from = s.from; from < s.to; from += units) out.push([s.window, from, Math.min(s.to, from + units), s.sign]);
  return out;
}

export class UsageReader {
  readonly #statements = new Map<string, Statement>();
  readonly #dictIds;
  readonly #dictValues;
  readonly #cursor;

  /**
   * `check` runs between the spans of a query's scan (SQL calls it once per piece of a span, in the outer loop)
   * and throws to stop the statement: better-sqlite3 has no sqlite3_interrupt, and a query over months
   * of rollups can run for seconds after its caller left or its budget ran out.
   */
  constructor(
    private readonly db: Connection,
    check: () => void = () => {},
  ) {
    // One argument (the span's window), so that SQLite places the call in the spans' loop.
    db.function('bm_check', { deterministic: false }, (_window: unknown) => {
      check();
      return 1;
    });
    this.#dictIds = db.prepare('SELECT id, value FROM dict WHERE value IN (SELECT value FROM json_each(?))');
    this.#dictValues = db.prepare('SELECT id, value FROM dict WHERE id IN (SELECT value FROM json_each(?))');
    this.#cursor = db.prepare("SELECT value FROM derived_counters WHERE name = 'usage_seq'").pluck();
  }

  /**
   * `read` in one read transaction whose derived-file snapshot is taken first: the events file's,
   * taken after it, then holds every event the rollups count (a fold folds committed events only),
   * so the events at or below the cursor are exactly the folded ones.
   */
  #derivedFirst<T>(read: () => T): T {
    return this.db.transaction(() => {
      this.#cursor.get();
      return read();
    })();
  }

  query(tenantId: number, q: UsageStoreQuery): UsageColumns {
    return this.#derivedFirst(() => this.#queryFiltered(tenantId, q));
  }

  #queryFiltered(tenantId: number, q: UsageStoreQuery): UsageColumns {
    const filters: [Dimension, number[]][] = [];
    for (const [dimension, values] of Object.entries(q.filters) as [Dimension, string[]][]) {
      const ids = this.#filterIds(dimension, values);
      if (ids.length === 0) return labelled(q.groupBy, idColumns(q.groupBy, 0), new Map());
      filters.push([dimension, ids]);
    }
    // The byte measures' parts joined in SQL; a sum past 64 bits is read again in parts (wide.ts).
    try {
      return this.#query(tenantId, q, filters, false);
    } catch (err) {
      if (!(err instanceof SumOutOfRangeError)) throw err;
      return this.#query(tenantId, q, filters, true);
    }
  }

  #query(tenantId: number, q: UsageStoreQuery, filters: [Dimension, number[]][], parts: boolean): UsageColumns {
    // A rollup row's columns, or an events row's as its rollup row would hold them (unqualified: the spans' columns are all w.).
    const source = (shape: Shape) => {
      const events = readsEvents(shape);
      const dimension = (d: Dimension) => (events ? eventDimensionSql(EVENT_COLUMNS, d) : `u.${DIMENSION_COLUMN[d]}`);
      const measures = events ? eventMeasureSql(EVENT_COLUMNS, parts) : parts ? STORED_MEASURE_COLUMNS.map((c) => `u.${c}`) : joinedMeasureSql('u');
      return { dimension, measures, where: filters.map(([d, ids]) => `${dimension(d)} IN (${ids.join(', ')})`) };
    };
    const direct = directWindows(q.terms, q.groupBy, q.filters);
    if (direct !== undefined) {
      const { shape } = q.terms[0]!;
      const { first, count } = direct;
      const { dimension, measures, where } = source(shape);
      // Each unit looked up by equality, so that a dimension filtered after the time column in the key narrows the lookup.
      const units = Array.from({ length: count }, (_, w) => first + w);
      const sql = `SELECT u.${shape.grain}${q.groupBy.map((d) => `, ${dimension(d)}`).join('')}, ${measures.join(', ')}
  FROM ${shape.table} u WHERE u.tenant = ? AND u.${shape.grain} IN (SELECT value FROM json_each(?))${where.map((c) => ` AND ${c}`).join('')}`;
      return this.#columns(q, integerRows(this.#prepare(sql).raw(true).iterate(tenantId, JSON.stringify(units)) as Iterable<bigint[]>), first, parts);
    }
    const keys = q.groupBy.map((_, g) => `, g${g}`).join('');
    // Spans drive the join (CROSS JOIN fixes the order): each is one range scan of the (tenant, hour
    // or day) key, or of the events' (tenant, timestamp) index. Left to itself the planner scanned the
    // rollup once and every window per row (10 s at 200k rows). Each term's rows are signed (an edge
    // hour may be taken away), then summed.
    // The spans are MATERIALIZED: inlined, each use of a span's field in the join re-read its JSON
    // (three times the CPU of hourly windows). One term (most queries) is summed in place; several
    // are summed over their UNION ALL.
    const single = q.terms.length === 1;
    const measure = (x: string, m: number) => (single ? `sum(w.k * ${x})` : `w.k * ${x} AS m${m}`);
    const terms = q.terms.map((term, t) => {
      const { dimension, measures, where } = source(term.shape);
      const groups = q.groupBy.map((d, g) => `, ${dimension(d)} AS g${g}`).join('');
      // The events folded only (FOLDED), the same snapshot as the rollups read beside them: an answer counts one set of events.
      const join = readsEvents(term.shape)
        ? `events ON bm_check(w.i) AND tenant = ? AND timestamp >= w.s * 3600 AND timestamp < w.e * 3600 AND ${FOLDED}`
        : `${term.shape.table} u ON bm_check(w.i) AND u.tenant = ? AND u.${term.shape.grain} >= w.s AND u.${term.shape.grain} < w.e`;
      return `SELECT w.i AS i${groups}, ${measures.map(measure).join(', ')}
  FROM w${t} w CROSS JOIN ${join}
  ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}`;
    });
    const spans = `WITH ${q.terms.map((_, t) => `w${t}(i, s, e, k) AS MATERIALIZED (SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(?))`).join(', ')}`;
    const sql = single
      ? `${spans}\n${terms[0]}\nGROUP BY i${keys}`
      : `${spans}
SELECT i${keys}, ${(parts ? STORED_MEASURE_COLUMNS : MEASURES).map((_, m) => `sum(m${m})`).join(', ')}
FROM (${terms.join('\nUNION ALL\n')})
GROUP BY i${keys}`;
    const params = [
      ...q.terms.map((term) => JSON.stringify(term.spans.flatMap((s) => pieces(s, PIECE_UNITS[term.shape.grain])))),
      ...q.terms.map(() => tenantId),
    ];
    return this.#columns(q, integerRows(this.#prepare(sql).raw(true).iterate(...params) as Iterable<bigint[]>), 0, parts);
  }

  /** Raw rows (their window, or unit: the window plus `first`; the groups; the measures, or their `parts`) as columns, as they are read. */
  #columns(q: UsageStoreQuery, raw: Iterable<bigint[]>, first: number, parts: boolean): UsageColumns {
    const n = q.groupBy.length;
    let rows = idColumns(q.groupBy, 1024);
    let i = 0;
    for (const row of raw) {
      if (i === rows.window.length) rows = resized(rows, i * 2);
      rows.window[i] = Number(row[0]) - first;
      for (let g = 0; g < n; g++) rows.ids[g]![i] = Number(row[1 + g]);
      if (!parts) {
        for (let m = 0; m < MEASURES.length; m++) rows.measures[m]![i] = row[1 + n + m]!;
      } else {
        const measures = measuresOf(row, 1 + n);
        for (let m = 0; m < MEASURES.length; m++) setMeasure(rows, m, i, measures[m]!);
      }
      i++;
    }
    rows = resized(rows, i);
    return labelled(q.groupBy, rows, this.#values(dictionaryIds(q.groupBy, rows)));
  }

  /**
   * The tenant's events before `toDay` (its tenant_day rows from day 0) and its rebuilds, its own
   * and every tenant's (UsageStore.version): one statement, so one snapshot.
   */
  version(tenantId: number, toDay: number): DataVersion {
    const [events, rebuilds] = this.#prepare(VERSION_SQL).raw(true).get(tenantId, toDay, tenantId, EVERY_TENANT) as [bigint, bigint];
    return { events, rebuilds };
  }

  /** In one read transaction: receipts, events and rollups from the same snapshots (#derivedFirst). */
  reconcile(tenantId: number, fromDay: number, toDay: number): UsageDayCheck[] {
    return this.#derivedFirst(() => this.#reconcile(tenantId, fromDay, toDay));
  }

  #reconcile(tenantId: number, fromDay: number, toDay: number): UsageDayCheck[] {
    const days = new DayChecks();
    const at = (day: bigint) => days.at(day);
    const range = [tenantId, fromDay, toDay];
    const receipts = this.#prepare('SELECT day, received, stored, duplicates, rejected FROM usage_receipts WHERE tenant = ? AND day >= ? AND day < ?');
    for (const [day, received, stored, duplicates, rejected] of receipts.raw(true).all(...range) as bigint[][]) {
      at(day!).receipts = { received: received!, stored: stored!, duplicates: duplicates!, rejected: rejected! };
    }
    const events = this.#prepare(`SELECT timestamp / 86400, ${storedMeasureSql(EVENT_COLUMNS).join(', ')} FROM events
      WHERE tenant = ? AND timestamp >= ? * 86400 AND timestamp < ? * 86400 GROUP BY 1`);
    for (const row of integerSums(() => events.raw(true).all(...range) as bigint[][])) at(row[0]!).events = measuresOf(row, 1);
    // Late events arrive on any day, whatever their timestamp: the whole tenant is read.
    const arrivals = this.#prepare(`SELECT (timestamp + received_after) / 86400 AS day, count(*) FROM events
      WHERE tenant = ? AND day >= ? AND day < ? GROUP BY 1`);
    for (const [day, n] of arrivals.raw(true).all(...range) as bigint[][]) at(day!).storedByArrival = n!;
    for (const shape of SHAPES) {
      const perDay = 24 / GRAIN_HOURS[shape.grain];
      const sums = this.#prepare(`SELECT ${shape.grain} / ${perDay}, ${STORED_MEASURE_COLUMNS.map((c) => `sum(${c})`).join(', ')} FROM ${shape.table}
        WHERE tenant = ? AND ${shape.grain} >= ? * ${perDay} AND ${shape.grain} < ? * ${perDay} GROUP BY 1`);
      for (const row of integerSums(() => sums.raw(true).all(...range) as bigint[][])) at(row[0]!).rollups[shape.name] = measuresOf(row, 1);
    }
    const unfolded = this.#prepare(`SELECT timestamp / 86400, ${storedMeasureSql(EVENT_COLUMNS).join(', ')} FROM events
      WHERE ${UNFOLDED} AND tenant = ? AND timestamp >= ? * 86400 AND timestamp < ? * 86400 GROUP BY 1`);
    for (const row of integerSums(() => unfolded.raw(true).all(...range) as bigint[][])) days.unfolded(row[0]!, measuresOf(row, 1));
    return days.list();
  }

  /** Rollup column values matching a filter's values: dictionary ids, 0 for '', action codes. */
  #filterIds(dimension: Dimension, values: string[]): number[] {
    if (dimension === 'action') return values.filter(isActionName).map((name) => KINDS[name].code);
    const ids = values.includes('') ? [0] : [];
    const named = values.filter((v) => v !== '');
    if (named.length > 0) for (const [id] of this.#dictIds.raw(true).all(JSON.stringify(named)) as [number][]) ids.push(id);
    return ids;
  }

  #values(ids: number[]): Map<number, string> {
    const out = new Map<number, string>();
    if (ids.length > 0) for (const [id, value] of this.#dictValues.raw(true).all(JSON.stringify(ids)) as [number, string][]) out.set(id, value);
    return out;
  }

  #prepare(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      if (this.#statements.size >= STATEMENT_CACHE) this.#statements.delete(this.#statements.keys().next().value!);
      statement = this.db.prepare(sql).safeIntegers(true);
      this.#statements.set(sql, statement);
    }
    return statement;
  }
}
