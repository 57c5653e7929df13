/**
 * The usage query rules: the windows of the time zone, the shape that answers exactly and cheapest,
 * the row order and pages; and reconciliation (receipts, raw events and every rollup shape agree).
 * Knows nothing of HTTP: the route and the CLI both call it.
 */
import { BmError } from '../errors.js';
import { KeptAnswers } from '../query/kept.js';
import { timed } from '../query/timed.js';
import type { DataVersion, InventoryStore, UsageColumns, UsageDayCheck, UsageStore, UsageStoreRow } from '../store/types.js';
import { columnRows, rowColumns } from '../store/usage-columns.js';
import { STORAGE_MEASURES, foldStorage } from '../inventory/measures.js';
import type { ReconcileRequest, UsageRequest } from './params.js';
import { MEASURES, SHAPES, planUsage } from './shapes.js';
import type { Dimension } from './shapes.js';
import { windowBounds, ZoneNotExactError } from './windows.js';

export interface UsageRow {
  /** Epoch seconds. */
  start: number;
  end: number;
  /** One per groupBy dimension, in its order. */
  values: (string | null)[];
  /** In MEASURES order. */
  measures: bigint[];
}

export interface UsagePage {
  /** Window boundaries, hours since the epoch: window i is [bounds[i], bounds[i + 1]). */
  bounds: number[];
  columns: UsageColumns;
  /** The page's rows, as indexes into `columns`, in answer order. */
  order: Int32Array;
  nextCursor: string | null;
  /** The shapes that answered (for docs and tests: the routing rule made visible). */
  shapes: string[];
}

/** A page's rows as objects (the CLI's table; tests). */
export function pageRows(page: UsagePage): UsageRow[] {
  const { columns, bounds } = page;
  return [...page.order].map((i) => ({
    start: bounds[columns.window[i]!]! * 3600,
    end: bounds[columns.window[i]! + 1]! * 3600,
    values: columns.values.map((v, g) => columns.labels[g]![v[i]!]!),
    measures: columns.measures.map((m) => m[i]!),
  }));
}

export interface ReconcileDay {
  day: number;
  receipts: UsageDayCheck['receipts'];
  storedByArrival: bigint;
  requests: bigint;
  rollupRequests: Record<string, bigint>;
}

export interface Difference {
  day: number;
  check: string;
  expected: bigint;
  actual: bigint;
}

const compareText = (a: string | null, b: string | null): number => (a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1);

/** Rows by start, then by each dimension's value (none first, then by code point). */
export function compareRows(a: { start: number; values: (string | null)[] }, b: { start: number; values: (string | null)[] }): number {
  if (a.start !== b.start) return a.start - b.start;
  for (let i = 0; i < a.values.length; i++) {
    const c = compareText(a.values[i]!, b.values[i]!);
    if (c !== 0) return c;
  }
  return 0;
}

/** The cursor is the last row's sort key: pages stay in order even when late events add rows. */
export function encodeCursor(row: { start: number; values: (string | null)[] }): string {
  return Buffer.from(JSON.stringify([row.start, ...row.values])).toString('base64url');
}

/**
 * The row a cursor stands after, only if this query could have made it (anything else is the client's
 * 400, never a page): the exact text encodeCursor gives, a start that is one of the query's window
 * starts (`bounds`, hours since the epoch), `width` values of text or none, the last `flags` of them
 * '1' or none (the cost rows' flags). A hand-made start before the first window would answer the
 * first page as if no cursor were given, one past the range an empty page.
 */
export function decodeCursor(cursor: string, bounds: readonly number[], width: number, flags = 0): { start: number; values: (string | null)[] } {
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    key = undefined;
  }
  let received = 'another string';
  if (Array.isArray(key) && key.length === width + 1 && typeof key[0] === 'number' && key.slice(1).every((v) => v === null || typeof v === 'string')) {
    const row = { start: key[0] as number, values: key.slice(1) as (string | null)[] };
    if (encodeCursor(row) === cursor && row.values.slice(width - flags).every((v) => v === null || v === '1')) {
      const window = bounds.indexOf(row.start / 3600);
      if (window >= 0 && window < bounds.length - 1) return row;
      received = `a row starting at ${row.start} (epoch seconds), not at a window of this query`;
    }
  }
  throw new BmError('BM_ERR_QUERY_INVALID', 'cursor was not made for this query', {
    errors: [{ path: '/cursor', message: 'cursor is not valid', expected: 'the nextCursor of the previous page of the same query', received }],
  });
}

const rowKey = (window: number, values: (string | null)[]) => JSON.stringify([window, values]);

/** Request rows and storage rows of the same windows and groups as one row each: request measures, then storage ones (0 where a side has none). */
function withStorage(requests: UsageStoreRow[], storage: UsageStoreRow[]): UsageStoreRow[] {
  const rows = new Map<string, UsageStoreRow>();
  const none = (n: number) => new Array<bigint>(n).fill(0n);
  for (const r of requests) rows.set(rowKey(r.window, r.values), { ...r, measures: [...r.measures, ...none(STORAGE_MEASURES.length)] });
  for (const s of storage) {
    const key = rowKey(s.window, s.values);
    const row = rows.get(key);
    if (row === undefined) rows.set(key, { ...s, measures: [...none(MEASURES.length), ...s.measures] });
    else row.measures.splice(MEASURES.length, STORAGE_MEASURES.length, ...s.measures);
  }
  return [...rows.values()];
}

/** The query's window boundaries (hours since the epoch); a zone off whole hours is the client's 400. */
export function requestBounds(request: UsageRequest): number[] {
  try {
    return windowBounds(request.from / 3600, request.to / 3600, request.granularity, request.timeZone);
  } catch (err) {
    if (err instanceof ZoneNotExactError) {
      throw new BmError('BM_ERR_USAGE_ZONE_NOT_EXACT', err.message, {
        errors: [{ path: '/timeZone', message: err.message, expected: 'a zone whose offsets are whole hours in this range, or granularity=none', received: JSON.stringify(request.timeZone) }],
      });
    }
    throw err;
  }
}

/**
 * The rows with a measure not zero, in answer order (window, then each dimension's value as
 * compareRows orders them). Each dimension's labels are ranked once; when the ranks fit, rows sort
 * as numbers (a typed array's native sort), not through a comparator on strings.
 */
function sortedRows(columns: UsageColumns, windows: number): Int32Array {
  const kept: number[] = [];
  for (let i = 0; i < columns.length; i++) {
    if (columns.measures.some((m) => m[i] !== 0n)) kept.push(i);
  }
  const ranks = columns.labels.map((labels) => {
    const rank = new Int32Array(labels.length);
    labels
      .map((_, k) => k)
      .sort((a, b) => compareText(labels[a]!, labels[b]!))
      .forEach((k, r) => {
        rank[k] = r;
      });
    return rank;
  });
  const n = kept.length;
  const radix = columns.labels.reduce((product, labels) => product * Math.max(1, labels.length), windows);
  const order = new Int32Array(n);
  if (radix * n <= Number.MAX_SAFE_INTEGER) {
    const keys = new Float64Array(n);
    for (let j = 0; j < n; j++) {
      const i = kept[j]!;
      let key = columns.window[i]!;
      for (let g = 0; g < ranks.length; g++) key = key * columns.labels[g]!.length + ranks[g]![columns.values[g]![i]!]!;
      keys[j] = key * n + j;
    }
    keys.sort();
    for (let j = 0; j < n; j++) order[j] = kept[keys[j]! % n]!;
    return order;
  }
  order.set(kept);
  return order.sort((a, b) => {
    if (columns.window[a] !== columns.window[b]) return columns.window[a]! - columns.window[b]!;
    for (let g = 0; g < ranks.length; g++) {
      const d = ranks[g]![columns.values[g]![a]!]! - ranks[g]![columns.values[g]![b]!]!;
      if (d !== 0) return d;
    }
    return 0;
  });
}

/**
 * A DataVersion (UsageStore.version: the tenant's events before a UTC day and its rebuilds) as the
 * kept answers compare it: the same text exactly when both parts are the same.
 */
export const versionKey = (version: DataVersion): string => `${version.events}/${version.rebuilds}`;

/**
 * Rows an answer of stored bytes, or of costs, may hold. Stored bytes (and their cost) carry on, so
 * a group holding some has a row in every window, and hourly windows over months multiply the
 * groups: past this the request is refused (BM_ERR_ANSWER_TOO_LARGE) rather than exhaust the node's
 * memory (933k rows of usage peaked at 0.8 GB of the server's RSS, 5.6M at 3.7 GB, near the heap's
 * limit; 933k of cost at 1.9 GB).
 */
export const MAX_ANSWER_ROWS = 1_000_000;

/** Rows of computed answers a process keeps for reuse (each row ~50 bytes as columns). */
export const KEPT_ROWS = 1_000_000;
/** The share of them one tenant may hold: it cannot push the others' answers out past half. */
const KEPT_SHARE = 0.5;
/**
 * How long an answer is kept after it was computed, used or not. Reuse is exact while the version
 * holds (a rebuild by another process, `usage rebuild`, moves it too); this bounds the memory of
 * answers nobody asks for again.
 */
const KEPT_MS = 5 * 60_000;
/**
 * What an answer weighs besides its rows, in rows of ~50 bytes: its objects, the headers of its
 * typed arrays, its key (64 rows, 3.2 KB; an empty answer measured 2.2–2.7 KB of heap). Its window
 * boundaries count a row each: an hourly answer of a year has 8,760 of them however few rows it has.
 */
const ANSWER_ROWS = 64;

/** A whole answer: its rows in answer order, as sortedRows gives them. */
interface Answer {
  bounds: number[];
  columns: UsageColumns;
  sorted: Int32Array;
  shapes: string[];
}

/** What an answer counts for against the kept rows. */
const answerWeight = (answer: Answer): number => answer.columns.length + answer.bounds.length + ANSWER_ROWS;

/** Pages of /v1/usage by where they came from: first pages (no cursor), next pages (with one). */
export interface UsagePageCounts {
  keptRows: number;
  first: { kept: number; computed: number };
  next: { kept: number; computed: number };
}

export class UsageService {
  /**
   * Computed answers, kept so that asking again (the first page of the same query, as a dashboard
   * and scripts do over a range that no longer changes) and the next pages are a slice, not a
   * recomputation (issue 13). Each is kept with the tenant's version (its event count and rebuilds,
   * UsageStore.version), read before the answer and again after it (unchanged), and reused only
   * while the version is unchanged: a page
   * from it is exactly the page computing again would give. It is found by tenant and query, not by
   * anything in the cursor: another process, an evicted answer or another tenant's cursor computes
   * the page as before.
   */
  readonly #kept: KeptAnswers<Answer>;
  readonly #counts = { first: { kept: 0, computed: 0 }, next: { kept: 0, computed: 0 } };

  /** `kept.rows`: 0 keeps nothing (every page computed). `limits.storageRows`: MAX_ANSWER_ROWS unless given. */
  constructor(
    private readonly usage: UsageStore,
    private readonly inventory: InventoryStore,
    kept: { rows?: number; now?: () => number } = {},
    private readonly limits: { storageRows?: number } = {},
  ) {
    this.#kept = new KeptAnswers({ rows: kept.rows ?? KEPT_ROWS, share: KEPT_SHARE, ttlMs: KEPT_MS, ...(kept.now ? { now: kept.now } : {}) });
  }

  /** For /metrics. */
  pageCounts(): UsagePageCounts {
    return { keptRows: this.#kept.rows, first: { ...this.#counts.first }, next: { ...this.#counts.next } };
  }

  /** `signal`: the caller left; its reads are not run (README, "Reads whose client left"). */
  async query(tenantId: number, request: UsageRequest, signal?: AbortSignal): Promise<UsagePage> {
    const bounds = requestBounds(request);
    const after = request.cursor === undefined ? undefined : decodeCursor(request.cursor, bounds, request.groupBy.length);
    const filters = Object.entries(request.filters)
      .map(([d, values]) => [d, [...values!].sort()] as const)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    const id = JSON.stringify([tenantId, request.from, request.to, request.granularity, request.timeZone, request.groupBy, filters, request.storage]);
    const toDay = Math.ceil(request.to / 86400);
    // Read before the answer: an answer kept under this version was computed from exactly its events and rebuilt rows.
    const version = versionKey(await timed(this.usage.version(tenantId, toDay, signal)));
    let answer = this.#kept.get(tenantId, id, version);
    this.#counts[after === undefined ? 'first' : 'next'][answer === undefined ? 'computed' : 'kept']++;
    if (answer === undefined) {
      answer = await this.#answer(tenantId, request, bounds, signal);
      // Kept only if no event it depends on came in, nor a rebuild, while it was computed (both only grow).
      if (versionKey(await timed(this.usage.version(tenantId, toDay, signal))) === version) this.#kept.set(tenantId, id, version, answer, answerWeight(answer));
    }
    const { columns, sorted } = answer;
    let first = 0;
    if (after !== undefined) {
      // The first row past the cursor's sort key (binary search: rows are sorted by it).
      let hi = sorted.length;
      while (first < hi) {
        const mid = (first + hi) >>> 1;
        const i = sorted[mid]!;
        let c = bounds[columns.window[i]!]! * 3600 - after.start;
        for (let g = 0; c === 0 && g < after.values.length; g++) c = compareText(columns.labels[g]![columns.values[g]![i]!]!, after.values[g]!);
        if (c > 0) hi = mid;
        else first = mid + 1;
      }
    }
    const more = sorted.length - first > request.limit;
    const order = sorted.subarray(first, more ? first + request.limit : sorted.length);
    let nextCursor: string | null = null;
    if (more) {
      const last = order[order.length - 1]!;
      nextCursor = encodeCursor({ start: bounds[columns.window[last]!]! * 3600, values: columns.values.map((v, g) => columns.labels[g]![v[last]!]!) });
    }
    return { bounds, columns, order, nextCursor, shapes: answer.shapes };
  }

  async #answer(tenantId: number, request: UsageRequest, bounds: number[], signal?: AbortSignal): Promise<Answer> {
    const terms = planUsage([...request.groupBy, ...(Object.keys(request.filters) as Dimension[])], bounds);
    const [requests, storage] = await Promise.all([
      timed(this.usage.query(tenantId, { terms, groupBy: request.groupBy, filters: request.filters }, signal)),
      request.storage ? timed(this.inventory.storage(tenantId, { bounds, groupBy: request.groupBy, filters: request.filters }, signal)) : undefined,
    ]);
    if (storage !== undefined) {
      const groups = new Set(storage.map((s) => JSON.stringify(s.values))).size;
      const windows = bounds.length - 1;
      const most = this.limits.storageRows ?? MAX_ANSWER_ROWS;
      if (groups * windows > most) {
        throw new BmError(
          'BM_ERR_ANSWER_TOO_LARGE',
          `Stored bytes of ${groups.toLocaleString('en')} groups in ${windows.toLocaleString('en')} windows are ${(groups * windows).toLocaleString('en')} rows, more than the ${most.toLocaleString('en')} a request may hold; ask for fewer windows or groups.`,
        );
      }
    }
    const columns =
      storage === undefined
        ? requests
        : rowColumns(request.groupBy, withStorage(columnRows(requests), foldStorage(bounds, storage)), MEASURES.length + STORAGE_MEASURES.length);
    return { bounds, columns, sorted: sortedRows(columns, bounds.length - 1), shapes: terms.map((t) => t.shape.name) };
  }

  /** Per UTC day: receipts, raw events and every rollup shape, and each way they disagree. */
  async reconcile(tenantId: number, request: ReconcileRequest, signal?: AbortSignal): Promise<{ days: ReconcileDay[]; differences: Difference[] }> {
    const checks = await timed(this.usage.reconcile(tenantId, request.from / 86400, request.to / 86400, signal));
    const differences: Difference[] = [];
    const expect = (day: number, check: string, expected: bigint, actual: bigint) => {
      if (expected !== actual) differences.push({ day, check, expected, actual });
    };
    for (const c of checks) {
      const r = c.receipts;
      expect(c.day, 'receipts: received = stored + duplicates + rejected', r.received, r.stored + r.duplicates + r.rejected);
      expect(c.day, 'receipts: stored = events stored that arrived this day', c.storedByArrival, r.stored);
      for (const shape of SHAPES) {
        MEASURES.forEach((measure, m) => {
          expect(c.day, `rollup ${shape.name}: ${measure} = ${measure} of the events`, c.events[m]!, c.rollups[shape.name]![m]!);
        });
      }
    }
    const days = checks.map((c) => ({
      day: c.day,
      receipts: c.receipts,
      storedByArrival: c.storedByArrival,
      requests: c.events[0]!,
      rollupRequests: Object.fromEntries(SHAPES.map((shape) => [shape.name, c.rollups[shape.name]![0]!])),
    }));
    return { days, differences };
  }

  /** Recomputes the rollups of [from, to) (epoch seconds, whole hours) from the events. */
  rebuild(tenantId: number | null, from: number, to: number): Promise<void> {
    return this.usage.rebuild(tenantId, from / 3600, to / 3600);
  }
}
