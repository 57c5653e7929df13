/**
 * Cost: per tenant, per provider account and plan, per UTC calendar month that the query overlaps,
 * the pricing engine's account-month is built from the usage (requests and billable egress per
 * attribution key × hour, read from the folded events: usage/shapes.ts EVENTS) and the object
 * inventory (StorageFeed), priced whole (tiers and allowances are consumed from the month's start,
 * whatever the query's range), then cut to the query's windows and filters and summed exactly.
 * Knows nothing of HTTP.
 */
import type { CostDimension, CostGroups, GroupedCost, ProviderCostRow } from '../pricing/aggregate.js';
import { addCostColumns, groupedCosts, mergeCosts } from '../pricing/aggregate.js';
import { planIdFor } from '../pricing/assignment.js';
import { versionAt } from '../pricing/catalogue.js';
import type { PricedRows } from '../pricing/columns.js';
import { BigColumn, KeyTable, Labels, actionIndex, keyFilter, selectRows } from '../pricing/columns.js';
import { monthBounds, priceColumns, unpricedColumns } from '../pricing/engine.js';
import type { UsageQuantities } from '../pricing/engine.js';
import type { PricePlan } from '../pricing/plan.js';
import type { KeyHour } from '../pricing/quantities.js';
import type { Pricing } from '../pricing/setup.js';
import { ReadAbortedError } from '../store/types.js';
import type { DataVersion, StorageFeed, StorageKey, UsageStore } from '../store/types.js';
import type { UsageColumns } from '../store/types.js';
import type { UsageRequest } from '../usage/params.js';
import { timed } from '../query/timed.js';
import { KeptAnswers } from '../query/kept.js';
import { MAX_ANSWER_ROWS, compareRows, decodeCursor, encodeCursor, requestBounds, versionKey } from '../usage/service.js';
import { DIMENSIONS, EVENTS, MEASURES } from '../usage/shapes.js';
import type { Dimension } from '../usage/shapes.js';
import { costCsv, costJson } from './format.js';
import { addEarlyDeletes, addLiveBytes, addSmallObjects, dailyPeaks, StorageHours } from './storage.js';
import { BmError } from '../errors.js';

const HOUR = 3600;
const DAY = 86400;
/**
 * Attribution key × hour quantities one request may price (all months together), and the months a
 * thread prices at once hold together (CostService.#pool), at most: each costs hundreds of bytes
 * as quantities and cost rows (COST_BYTES), so past the bound a request is refused (422) instead of
 * exhausting the cost thread's memory; the thread's bound is derived from its heap (costBounds). A
 * run of hours whose stored bytes do not change is one quantity, and the inventory
 * rows it is built from are counted before it is built: the bound is on the work.
 */
export const MAX_KEY_HOURS = 50_000_000;
/**
 * Fine cost rows (a run counts once) of priced account-months a process keeps for reuse, at most
 * (the thread's bound is derived from its heap: costBounds).
 */
export const KEPT_ROWS = 20_000_000;
/** Entries kept of answers (a month's groups for a query, or a whole answer): a dashboard asks a few, again and again. */
const KEPT_ANSWERS = 64;
/**
 * Rows kept of answers, all together, at most: a month's groups for a query and whole answers
 * (merged and sorted) each count their rows (COST_BYTES.answerRow each). An answer larger than the
 * bound is not kept.
 */
export const KEPT_ANSWER_ROWS = 300_000;
/**
 * Months priced at once by a cost thread; a request for another month waits its turn. Each holds a
 * month's quantities while it prices (together within one bound: CostService.#pool), and one pricing
 * goes on after its requests left (while it can still be kept), so without a bound requests given up
 * on would pile pricings up.
 */
const MAX_PRICINGS = 2;

/**
 * What the cost thread's memory holds, in bytes, measured (docs/BENCHMARKS.md, "The cost thread's
 * memory bounds": synthetic months of 22k to 1.1M quantities, and October and November of the
 * 10M-event reference mix, 19.8M quantities), the worst measured with room: the figures its bounds
 * are derived from.
 */
export const COST_BYTES = {
  /** The thread itself with nothing priced: its isolate, the price book, its reads (a small month priced in 16 MB). */
  base: 16 * 2 ** 20,
  /**
   * A quantity being priced, in V8's heap: the reads, the stored bytes' steps and runs, the engine's
   * work. The worst measured: a month of stored objects (1.1M quantities, 300k of them inventory
   * rows) priced in a V8 heap of 160 MB, not 128 (at most 153 a quantity); the reference mix, up to
   * 117 live at the bound's counts.
   */
  quantityHeap: 192,
  /** ...and in typed arrays, outside V8's heap limit: the month's requests and egress, the stored bytes' steps, the priced columns (measured 65–144). */
  quantityArrays: 160,
  /** A kept fine row in V8's heap: its share of its month's keys and labels (measured 1–39; the reference mix's November, 18)... */
  rowHeap: 64,
  /** ...and its columns, typed arrays with their room to grow (measured 47–95; the reference mix's November, 55). */
  rowArrays: 96,
  /** A kept row of an answer: a group (its dimensions, exact sums) or a whole answer's row (decimal texts); measured 750 and 660. */
  answerRow: 768,
  /** A kept page's text besides its characters (counted two bytes each): its key, its entry and the page object (measured 106–222 bytes). */
  keptText: 256,
} as const;

export interface CostBounds {
  /** The V8 heap (old generation) to start the thread with: the memory less the typed arrays its bounds allow. */
  heapMb: number;
  maxKeyHours: number;
  keptRows: number;
  keptAnswerRows: number;
}

/**
 * The cost thread's bounds from the memory it is given (--cost-heap-mb), so that what it keeps and
 * what one request prices fit in it together: a request too large for it is refused with
 * BM_ERR_COST_TOO_LARGE by its bound, not by the thread running out of heap (which drops every kept
 * month and every request in flight). Of the memory past the thread's own: 5/8 for the months being
 * priced (one request's, and the two priced at once together), 2/8 for kept months, 1/8 for kept
 * answers, each at most its constant. The typed arrays (columns) are outside V8's heap limit, so
 * the heap is given what they may take less.
 */
export function costBounds(memoryMb: number): CostBounds {
  // A MB less: the heap given is whole MB, rounded down.
  const free = Math.max(0, (memoryMb - 1) * 2 ** 20 - COST_BYTES.base);
  const maxKeyHours = Math.min(MAX_KEY_HOURS, Math.floor((free * 5) / 8 / (COST_BYTES.quantityHeap + COST_BYTES.quantityArrays)));
  const keptRows = Math.min(KEPT_ROWS, Math.floor((free * 2) / 8 / (COST_BYTES.rowHeap + COST_BYTES.rowArrays)));
  const keptAnswerRows = Math.min(KEPT_ANSWER_ROWS, Math.floor(free / 8 / COST_BYTES.answerRow));
  const arrays = maxKeyHours * COST_BYTES.quantityArrays + keptRows * COST_BYTES.rowArrays;
  return { heapMb: Math.max(1, Math.floor(memoryMb - arrays / 2 ** 20)), maxKeyHours, keptRows, keptAnswerRows };
}
/** Months found past the bound on their own, remembered with their version (a refusal is then answered at once). */
const KEPT_REFUSALS = 1024;
/** A month's requests and egress are read a day at a time, so that the bound refuses it after the day that passes it. */
const HOURS_PER_READ = 24;
const REQUESTS = MEASURES.indexOf('requests');
const EGRESS = MEASURES.indexOf('billableEgressBytes');

export interface CostRowOut extends GroupedCost {
  readonly end: number;
}

export interface CostPage {
  rows: CostRowOut[];
  nextCursor: string | null;
}

/**
 * One provider account on one plan in one month: the fine rows of its pricing, as columns
 * (`priced`, not enumerable). `rows` makes them objects (CostRow with the provider) when asked:
 * for tests and small callers, never on the request path.
 */
export interface PricedAccount {
  readonly provider: string;
  readonly month: string;
  readonly priced: PricedRows;
  readonly rows: ProviderCostRow[];
}

function pricedAccount(provider: string, month: string, priced: PricedRows): PricedAccount {
  const out = { provider, month } as PricedAccount;
  Object.defineProperty(out, 'priced', { value: priced, enumerable: false });
  Object.defineProperty(out, 'rows', { enumerable: true, get: () => [...priced.objects()].map((r) => ({ ...r, provider })) });
  return out;
}

interface Account {
  provider: string;
  /** undefined: the provider has no plan (unpriced). */
  planId: string | undefined;
  versions: readonly PricePlan[];
  /** Every key of the account's quantities (the month's labels shared by its accounts). */
  keys: KeyTable;
  usage: UsageBuilder;
  storage: StorageHours;
  /** daily-peak plans: the account's peak live bytes per UTC day. */
  peaks?: Map<number, bigint>;
}

/** Requests and billable egress per key × hour, appended as read (UsageQuantities). */
class UsageBuilder implements UsageQuantities {
  length = 0;
  hour = new Float64Array(1024);
  key = new Int32Array(1024);
  requests = new Float64Array(1024);
  readonly egress = new BigColumn();

  push(hour: number, key: number, requests: number, egress: bigint): void {
    const i = this.length++;
    if (i === this.hour.length) {
      const grow = <T extends Float64Array | Int32Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(a.length * 2);
        b.set(a);
        return b;
      };
      this.hour = grow(this.hour);
      this.key = grow(this.key);
      this.requests = grow(this.requests);
    }
    this.hour[i] = hour;
    this.key[i] = key;
    this.requests[i] = requests;
    this.egress.set(i, egress);
  }
}


/**
 * The one place usage rows become quantities: each row of a read of the events (every
 * dimension grouped, hour windows) with requests or billable egress is appended to its account
 * (`accountOf` its provider and bucket), its key's labels as ids. Measures are read as bigints
 * (ArrayLike: 64-bit arrays from the stores, any size otherwise); requests become a number (a
 * count of one key in one hour), egress stays a bigint.
 */
function addUsage(usage: UsageColumns, hourOf: (window: number) => number, labels: Labels, accountOf: (provider: string, bucket: string | null) => Account | undefined): void {
  const [provider, bucket, customer, feature, clientType, clientId, action] = usage.values as [Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array];
  const names = usage.labels;
  // Each dimension's labels of this read as month label ids (action: ACTION_NAMES index, -1 none).
  const ids = names.map((list, d) => Int32Array.from(list, (v) => (d === 6 ? (v === null ? -1 : actionIndex(v)) : labels.id(v))));
  const accounts = new Map<number, Account | undefined>();
  const requests = usage.measures[REQUESTS]!;
  const egress = usage.measures[EGRESS]!;
  const key = new Int32Array(5);
  for (let i = 0; i < usage.length; i++) {
    // The account first: a row opens its account even when it prices nothing (as a month it used).
    const p = provider[i]!;
    const b = bucket[i]!;
    const route = p * names[1]!.length + b;
    let a = accounts.get(route);
    if (a === undefined && !accounts.has(route)) {
      a = accountOf(names[0]![p] ?? '', names[1]![b]!);
      accounts.set(route, a);
    }
    const act = ids[6]![action[i]!]!;
    if (a === undefined || act < 0) continue;
    const r = requests[i]!;
    const e = egress[i]!;
    if (r === 0n && e === 0n) continue;
    key[0] = ids[2]![customer[i]!]!;
    key[1] = ids[3]![feature[i]!]!;
    key[2] = ids[4]![clientType[i]!]!;
    key[3] = ids[5]![clientId[i]!]!;
    key[4] = ids[1]![b]!;
    a.usage.push(hourOf(usage.window[i]!), a.keys.addIds(key, act), Number(r), e);
  }
}

/** UTC months (YYYY-MM) overlapping [from, to). */
export function monthsOf(from: number, to: number): string[] {
  const out: string[] = [];
  const d = new Date(from * 1000);
  for (let y = d.getUTCFullYear(), m = d.getUTCMonth(); Date.UTC(y, m, 1) / 1000 < to; m++) {
    out.push(new Date(Date.UTC(y, m, 1)).toISOString().slice(0, 7));
  }
  return out;
}

/** Whether an account's rows pass a provider filter ('' is no provider; an account's provider is always text, as the rows' were). */
function providerPasses(provider: string, filters: UsageRequest['filters']): boolean {
  const values = filters.provider;
  return values === undefined || values.some((v) => v !== '' && v === provider);
}

/** A page as sent: JSON or CSV (request.format), and the cursor of the next page. */
export interface CostText {
  readonly text: string;
  readonly nextCursor: string | null;
}

/** A whole answer kept (CostService.#answers): its rows, merged and sorted, and the pages written from them. */
interface WholeAnswer {
  readonly months: WeakRef<PricedAccount[]>[];
  readonly sorted: readonly CostRowOut[];
  /** Pages as sent (pageText), by format, cursor and limit. */
  readonly texts: Map<string, CostText>;
  /** What the texts weigh, as answer rows (textWeight). */
  textRows: number;
}

/** A kept answer: a month's groups for a query, or a whole answer. */
type KeptAnswer = { readonly months: WeakRef<PricedAccount[]>[]; readonly groups: CostGroups } | WholeAnswer;

const weight = (answer: KeptAnswer | undefined) => (answer === undefined ? 0 : 'groups' in answer ? answer.groups.size : answer.sorted.length + answer.textRows);

/**
 * A kept page's heap as answer rows (COST_BYTES.answerRow each): two bytes a character (V8 keeps a
 * text with any character past U+00FF as UTF-16, one byte a character otherwise) and its entry.
 */
const textWeight = (key: string, page: CostText) => Math.ceil((2 * (key.length + page.text.length + (page.nextCursor?.length ?? 0)) + COST_BYTES.keptText) / COST_BYTES.answerRow);

const tooMany = (most: number) =>
  new BmError('BM_ERR_ANSWER_TOO_LARGE', `The costs asked for are more than the ${most.toLocaleString('en')} rows (groups × windows) a request may hold; ask for fewer windows or groups.`);

/** The request's cursor decoded (one this query could have made: its windows, its flags): a bad one is refused before anything is priced. */
const cursorOf = (request: UsageRequest, windows: AnswerWindows) => (request.cursor === undefined ? undefined : decodeCursor(request.cursor, windows.bounds, request.groupBy.length + 4, 2));

/** The rows of a whole answer after the cursor, at most request.limit; the kept rows themselves, not copies. */
function pageOf(sorted: readonly CostRowOut[], request: UsageRequest, after: ReturnType<typeof cursorOf>): CostPage {
  const rows: CostRowOut[] = [];
  let more = false;
  for (const g of sorted) {
    if (after !== undefined && compareRows({ start: g.start, values: sortValues(g, request.groupBy) }, after) <= 0) continue;
    if (rows.length === request.limit) {
      more = true;
      break;
    }
    rows.push(g);
  }
  const last = rows[rows.length - 1];
  return { rows, nextCursor: more && last !== undefined ? encodeCursor({ start: last.start, values: sortValues(last, request.groupBy) }) : null };
}

/** A request's windows: their bounds (hours since the epoch), each hour's window, and each window's bounds (seconds). */
interface AnswerWindows {
  readonly bounds: readonly number[];
  windowOf(hour: number): number;
  readonly starts: readonly number[];
  readonly ends: readonly number[];
  endOf(start: number): number;
}

function answerWindows(request: UsageRequest): AnswerWindows {
  const bounds = requestBounds(request);
  const fromHour = request.from / HOUR;
  const windowOfHour = new Int32Array(bounds[bounds.length - 1]! - fromHour);
  for (let w = 0; w + 1 < bounds.length; w++) windowOfHour.fill(w, bounds[w]! - fromHour, bounds[w + 1]! - fromHour);
  const starts = bounds.slice(0, -1).map((b) => b * HOUR);
  const ends = bounds.slice(1).map((b) => b * HOUR);
  const endOfStart = new Map(starts.map((s, w) => [s, ends[w]!]));
  return { bounds, windowOf: (hour) => windowOfHour[hour / HOUR - fromHour]!, starts, ends, endOf: (start) => endOfStart.get(start)! };
}

export interface CostDeps {
  usage: Pick<UsageStore, 'query' | 'version'>;
  /** The object inventory: stored bytes and the intervals behind them. */
  storage: StorageFeed;
  pricing: Pricing;
  /** Epoch seconds now: a month is complete (month-end charges known) once it is over. */
  now?: () => number;
  /** Default MAX_KEY_HOURS. */
  maxKeyHours?: number;
  /** Rows (groups × windows) an answer may hold; default MAX_ANSWER_ROWS. */
  maxAnswerRows?: number;
  /** Default KEPT_ROWS; 0 keeps none. */
  keptRows?: number;
  /** Rows of whole answers kept, all together; default KEPT_ANSWER_ROWS. */
  keptAnswerRows?: number;
}

/**
 * Whether a request's caller has left. Polled, not an AbortSignal: the cost thread prices without
 * returning to its event loop, where a signal's abort would be delivered.
 */
export type Cancelled = () => boolean;

/** What one request may still price; `limit` is what it started with. */
interface Budget {
  left: number;
  readonly limit: number;
  readonly cancelled: Cancelled;
  /** A month's pricing's (CostService.priceMonth): the thread's pool its quantities are held in, and how many it holds. */
  readonly share?: { readonly pool: Pool; held: number };
}

/**
 * The quantities of the months a thread prices at once, held together against one bound (its
 * maxKeyHours: costBounds' 5/8 is for them all, not for each), each given back when its pricing ends.
 */
interface Pool {
  readonly size: number;
  held: number;
  /** The most held at once. */
  peak: number;
}

/**
 * A pricing within its request's bound but past the pool, another pricing holding the rest: it
 * gives back what it took and prices again alone (CostService.#pooled), never refused for it.
 */
class PoolTaken extends Error {}

/** Between a request's reads and pricing steps: one whose caller left stops there. */
function checkpoint(budget: Budget): void {
  if (budget.cancelled()) throw new ReadAbortedError('the cost request was abandoned: its caller left');
}

const tooLargeDetail = (budget: Budget, month: string) =>
  `Pricing ${month} needs more than the ${budget.limit.toLocaleString('en')} attribution key × hour quantities a request may price; a provider filter narrows it.`;
const tooLarge = (budget: Budget, month: string) => new BmError('BM_ERR_COST_TOO_LARGE', tooLargeDetail(budget, month));

/** The same refusal, thrown while a month's requests and egress are counted: one of usage rows alone. */
class UsageTooLarge extends BmError {
  constructor(budget: Budget, month: string) {
    super('BM_ERR_COST_TOO_LARGE', tooLargeDetail(budget, month));
  }
}

function spend(budget: Budget, keyHours: number, month: string, refusal: (budget: Budget, month: string) => BmError = tooLarge): void {
  checkpoint(budget);
  budget.left -= keyHours;
  if (budget.left < 0) throw refusal(budget, month);
  const share = budget.share;
  if (share === undefined) return;
  const { pool } = share;
  // Alone, past the pool is past the month's bound (a request's is never more than the pool, unless given one that is).
  if (pool.held + keyHours > pool.size) throw pool.held > share.held ? new PoolTaken() : refusal(budget, month);
  share.held += keyHours;
  pool.held += keyHours;
  pool.peak = Math.max(pool.peak, pool.held);
}

/** A month being priced, and the requests waiting for it (each gone once its flag is set). */
interface MonthPricing {
  readonly waiting: Cancelled[];
  /** The key-hours it began with: what the request that began it had left. */
  readonly left: number;
  accounts: Promise<PricedAccount[]>;
  /** Settled once it is out of CostService.#pricings and the requests waiting a turn were woken. */
  ended: Promise<void>;
}

/** Whether a request still waits for the pricing (one whose flag is not set). */
const waitedFor = (pricing: MonthPricing): boolean => pricing.waiting.some((left) => !left());

export class CostService {
  /** Priced account-months, bounded by their rows; each kept with its version (CostService.#version). */
  readonly #kept: KeptAnswers<PricedAccount[]>;
  /**
   * Answers kept for asking again, least recently kept out first, each with the priced months it was
   * made from: reused while every one of them is still the one kept (not holding them alive). Two
   * kinds, by id: a month's groups for a query (merged with the other months' into an answer: a
   * month priced again leaves the others' reused) and whole answers (the months' groups merged and
   * sorted, with the pages written from them as sent). Bounded together by their rows
   * (keptAnswerRows): a group weighs about what an answer's row does, a page its characters
   * (textWeight), and uncounted, the groups of 8 hourly answers held 412 MB (review).
   */
  readonly #answers = new Map<string, KeptAnswer>();
  /** The rows of #answers, all together. */
  #answerRows = 0;
  /**
   * Months past the bound with the whole of it (as priceMonth's ids), by the version they were
   * refused at: refused again at once while it is unchanged, or, where its usage rows alone passed
   * the bound, at any later version with the same rebuilds: events are only ever added, and an event
   * adds to a key × hour row or adds one, so those rows never become fewer (the month still taking
   * events, as the current one does, is refused at once too); a rebuild may leave fewer (damaged
   * rows gone), so after one the month is priced again. A dashboard asks several costs of the same range per
   * visit, and each refusal read the month's usage first (seconds at 10M events).
   */
  readonly #refused = new Map<string, { version: DataVersion; grows: boolean }>();
  /** Months being priced, by priceMonth's id and version: at most MAX_PRICINGS at once. */
  readonly #pricings = new Map<string, MonthPricing>();
  /** Requests waiting for a pricing to end before they start theirs (each gone once its flag is set). */
  readonly #turns: { wake: () => void; left: Cancelled }[] = [];
  /** The quantities of #pricings, together at most maxKeyHours (what costBounds sized the heap for). */
  readonly #pool: Pool;
  /**
   * Pricings that passed the pool while another held the rest, until they end: the first prices
   * alone once every other pricing has ended or waits here too; no pricing starts meanwhile.
   */
  #alone: { pricing: MonthPricing; wake?: () => void }[] = [];

  constructor(private readonly deps: CostDeps) {
    this.#kept = new KeptAnswers({ rows: deps.keptRows ?? KEPT_ROWS });
    this.#pool = { size: deps.maxKeyHours ?? MAX_KEY_HOURS, held: 0, peak: 0 };
  }

  #budget(cancelled: Cancelled = () => false): Budget {
    const limit = this.deps.maxKeyHours ?? MAX_KEY_HOURS;
    return { left: limit, limit, cancelled };
  }

  /**
   * The fine rows of every account-month overlapping the request, cut to [from, to) and the
   * filters: what /v1/costs groups, and what the FOCUS export writes row by row.
   */
  async fineRows(tenantId: number, request: Pick<UsageRequest, 'from' | 'to' | 'filters'>, cancelled?: Cancelled): Promise<PricedAccount[]> {
    const out: PricedAccount[] = [];
    const budget = this.#budget(cancelled);
    for (const month of monthsOf(request.from, request.to)) {
      for (const account of await this.priceMonth(tenantId, month, request.filters.provider, budget)) {
        if (!providerPasses(account.provider, request.filters)) continue;
        const rows = selectRows(account.priced, request.from, request.to, keyFilter(account.priced.keys.labels, request.filters));
        if (rows.length > 0) out.push(pricedAccount(account.provider, account.month, rows));
      }
    }
    return out;
  }

  /** `cancelled`: polled between reads and pricing steps; once true, rejects with ReadAbortedError. */
  async query(tenantId: number, request: UsageRequest, cancelled?: Cancelled): Promise<CostPage> {
    const windows = answerWindows(request);
    const after = cursorOf(request, windows);
    return pageOf((await this.#whole(tenantId, request, windows, cancelled)).answer.sorted, request, after);
  }

  /**
   * The page as sent: JSON or CSV (request.format), written by format.ts as for the CLI. Kept beside
   * the whole answer it was written from, by format, cursor and limit, and dropped with it: asked
   * again while the answer is reused, the same text is returned, no row or character made again.
   */
  async pageText(tenantId: number, request: UsageRequest, cancelled?: Cancelled): Promise<CostText> {
    const windows = answerWindows(request);
    const after = cursorOf(request, windows);
    const { id, answer } = await this.#whole(tenantId, request, windows, cancelled);
    const key = JSON.stringify([request.format, request.cursor ?? null, request.limit]);
    const kept = answer.texts.get(key);
    if (kept !== undefined) return kept;
    const page = pageOf(answer.sorted, request, after);
    const made = { text: request.format === 'csv' ? costCsv(request, page) : costJson(request, page), nextCursor: page.nextCursor };
    this.#keepText(id, answer, key, made);
    return made;
  }

  /**
   * The whole answer, every month's groups merged and sorted: the kept one when it was made from
   * exactly the months priceMonth returns now (each still the one kept), found before any month's
   * groups are looked at; else made from them and kept.
   */
  async #whole(tenantId: number, request: UsageRequest, windows: AnswerWindows, cancelled?: Cancelled): Promise<{ id: string; answer: WholeAnswer }> {
    const answerId = JSON.stringify([request.from, request.to, request.granularity, request.timeZone, request.groupBy, request.filters]);
    const id = `${tenantId}\u0000${answerId}`;
    const kept = this.#answers.get(id);
    const whole = kept !== undefined && 'sorted' in kept ? kept : undefined;
    const most = this.deps.maxAnswerRows ?? MAX_ANSWER_ROWS;
    const budget = this.#budget(cancelled);
    const months: { month: string; accounts: PricedAccount[] }[] = [];
    const merged: CostGroups = new Map();
    let mergedMonths = 0;
    // From the first month that is not one the kept answer was made from, every month's groups, each
    // merged once priced (so that too many groups are refused before the next month is priced).
    const mergeMonths = () => {
      for (; mergedMonths < months.length; mergedMonths++) {
        const { month, accounts } = months[mergedMonths]!;
        const groups = this.#monthGroups(`${tenantId}\u0000${month}\u0000${answerId}`, accounts, request, windows, most - merged.size);
        if (groups === undefined) throw tooMany(most);
        mergeCosts(merged, groups);
        if (merged.size > most) throw tooMany(most);
      }
    };
    for (const month of monthsOf(request.from, request.to)) {
      const accounts = await this.priceMonth(tenantId, month, request.filters.provider, budget);
      months.push({ month, accounts });
      if (mergedMonths === 0 && whole?.months[months.length - 1]?.deref() === accounts) continue;
      mergeMonths();
    }
    if (mergedMonths === 0 && whole !== undefined && whole.months.length === months.length) return { id, answer: whole };
    mergeMonths();
    const answer: WholeAnswer = { months: months.map((m) => new WeakRef(m.accounts)), sorted: groupedCosts(merged, windows.endOf), texts: new Map(), textRows: 0 };
    this.#keepAnswer(id, answer);
    return { id, answer };
  }

  /**
   * A month's groups for an answer: kept with the month's rows (so for as long as they are), else
   * made and kept; undefined when they would be more than `room`.
   */
  #monthGroups(monthId: string, accounts: PricedAccount[], request: UsageRequest, windows: AnswerWindows, room: number): CostGroups | undefined {
    const kept = this.#keptAnswer(monthId, [accounts]);
    if (kept !== undefined && 'groups' in kept) return kept.groups;
    const made: CostGroups = new Map();
    for (const account of accounts) {
      if (!providerPasses(account.provider, request.filters)) continue;
      const range = { from: request.from, to: request.to, filter: keyFilter(account.priced.keys.labels, request.filters) };
      // Stopped part way: not kept. The month's groups count against what the months before left (a window
      // across two months counts in both: refused a little early near the bound, never late).
      if (!addCostColumns(made, account.provider, account.priced, range, request.groupBy as CostDimension[], windows.windowOf, windows.starts, windows.ends, room)) return undefined;
    }
    this.#keepAnswer(monthId, { months: [new WeakRef(accounts)], groups: made });
    return made;
  }

  /**
   * Every account of the tenant in one month, priced whole; `providers`: only these (a provider
   * filter: accounts are apart). Kept and reused while the month's version is unchanged: read
   * before pricing and again after, a month is kept only when both agree, so what is kept was
   * priced from exactly the events that version counts.
   */
  async priceMonth(tenantId: number, month: string, providers?: readonly string[], budget = this.#budget()): Promise<PricedAccount[]> {
    const { end } = monthBounds(month);
    const complete = end <= (this.deps.now?.() ?? Date.now() / 1000);
    // JSON, not a join: a filter to the provider '' (events with none) must not read as no filter.
    const id = `${tenantId}\u0000${month}\u0000${complete}\u0000${JSON.stringify(providers === undefined ? null : [...providers].sort())}`;
    checkpoint(budget);
    const version = await this.#version(tenantId, end);
    const key = versionKey(version);
    const pricingId = `${id}\u0000${key}`;
    for (;;) {
      const kept = this.#kept.get(tenantId, id, key);
      if (kept !== undefined) return kept;
      const refused = this.#refused.get(id);
      if (
        refused !== undefined &&
        refused.version.rebuilds === version.rebuilds &&
        (refused.version.events === version.events || (refused.grows && version.events > refused.version.events))
      ) {
        throw tooLarge(budget, month);
      }
      // The same month at the same version, priced for another request: waited for, not priced twice.
      const running = this.#pricings.get(pricingId);
      if (running !== undefined) {
        running.waiting.push(budget.cancelled);
        try {
          return await running.accounts;
        } catch (err) {
          // Refused with less of the bound than this request has left (the request that began it had
          // spent on other months), or stopped as waited for by nobody (this request joined as it
          // decided so: its own steps never stop it): this request prices the month itself.
          const retry = (err instanceof BmError && err.code === 'BM_ERR_COST_TOO_LARGE' && running.left < budget.left) || err instanceof ReadAbortedError;
          if (!retry) throw err;
        }
        await running.ended;
        checkpoint(budget);
        continue;
      }
      if (this.#startable()) break;
      await new Promise<void>((wake) => this.#turns.push({ wake, left: budget.cancelled }));
      checkpoint(budget);
    }
    // Its own budget, from what the request has left: it goes on after the request left (below). Its
    // quantities are held in the thread's pool with those of the other month priced at once.
    const own: Budget = { left: budget.left, limit: budget.limit, cancelled: () => false, share: { pool: this.#pool, held: 0 } };
    const pricing: MonthPricing = { waiting: [budget.cancelled], left: budget.left, accounts: Promise.resolve([]), ended: Promise.resolve() };
    /**
     * Whether to go on: while a request waits for it, or else while what it prices is still the month's
     * latest version, so that it will be kept (a request that ran out of time, or whose client left,
     * is answered from it when asked again). Once the month has changed and nobody waits, it stops.
     */
    const wanted = async () => {
      if (waitedFor(pricing)) return;
      if (this.deps.keptRows === 0 || versionKey(await this.#version(tenantId, end)) !== key) {
        throw new ReadAbortedError('the cost request was abandoned: its caller left, and the month it priced has changed since');
      }
      // Pricings nobody waits for never hold every turn from a request that waits (requests whose
      // clients left at once, of another tenant maybe, would otherwise hold it for minutes): one stops.
      if (!this.#startable() && ![...this.#pricings.values()].some(waitedFor) && this.#turns.some((turn) => !turn.left())) {
        throw new ReadAbortedError('the cost request was abandoned: its caller left, and another request waits for its turn');
      }
    };
    pricing.accounts = this.#priceVersion(tenantId, month, id, version, complete, providers, own, wanted, pricing);
    this.#pricings.set(pricingId, pricing);
    // Nobody may be left to await it; its failure is each waiting request's, never an unhandled rejection.
    pricing.ended = pricing.accounts
      .then(
        () => {},
        () => {},
      )
      .finally(() => {
        this.#giveBack(own);
        this.#pricings.delete(pricingId);
        this.#alone = this.#alone.filter((a) => a.pricing !== pricing);
        this.#wakeAlone();
        for (const turn of this.#turns.splice(0)) turn.wake();
      });
    const accounts = await pricing.accounts;
    budget.left = own.left;
    return accounts;
  }

  /** The most quantities the months priced at once have held together (never past maxKeyHours): for tests and benches. */
  get quantitiesPeak(): number {
    return this.#pool.peak;
  }

  /** Whether a request may start a pricing: a turn is free, and no pricing waits to price alone. */
  #startable(): boolean {
    return this.#pricings.size < MAX_PRICINGS && this.#alone.length === 0;
  }

  /**
   * A month's pricing (`price`) with its quantities in the pool. Past the pool while another month
   * holds the rest, it gives back what it took, waits to price alone, then begins again: two
   * pricings never wait for each other, and a month that fits the bound alone is never refused for
   * another's (a refusal is by its own budget, which the other months' quantities do not touch).
   */
  async #pooled(pricing: MonthPricing, budget: Budget, price: () => Promise<PricedAccount[]>): Promise<PricedAccount[]> {
    const left = budget.left;
    for (;;) {
      try {
        return await price();
      } catch (err) {
        if (!(err instanceof PoolTaken)) throw err;
      }
      this.#giveBack(budget);
      budget.left = left;
      const turn: { pricing: MonthPricing; wake?: () => void } = { pricing };
      this.#alone.push(turn);
      await new Promise<void>((wake) => {
        turn.wake = wake;
        this.#wakeAlone();
      });
    }
  }

  /** Wakes the first pricing waiting to price alone once every other pricing has ended or waits so too. */
  #wakeAlone(): void {
    const first = this.#alone[0];
    if (first?.wake === undefined || ![...this.#pricings.values()].every((p) => this.#alone.some((a) => a.pricing === p))) return;
    first.wake();
    first.wake = undefined;
  }

  /** Gives back what a pricing holds of the pool. */
  #giveBack(budget: Budget): void {
    const share = budget.share!;
    this.#pool.held -= share.held;
    share.held = 0;
  }

  /** Prices one month at `version` (read before) and keeps it if the version read after agrees. */
  async #priceVersion(
    tenantId: number,
    month: string,
    id: string,
    version: DataVersion,
    complete: boolean,
    providers: readonly string[] | undefined,
    budget: Budget,
    wanted: () => Promise<void>,
    pricing: MonthPricing,
  ): Promise<PricedAccount[]> {
    const { end } = monthBounds(month);
    const key = versionKey(version);
    const whole = budget.left === budget.limit;
    let accounts: PricedAccount[];
    try {
      accounts = await this.#pooled(pricing, budget, () => this.#price(tenantId, month, complete, providers, budget, wanted));
    } catch (err) {
      const grows = err instanceof UsageTooLarge;
      if (whole && err instanceof BmError && err.code === 'BM_ERR_COST_TOO_LARGE') {
        // Past the bound with all of it. Usage rows counted at versions up to `after`: at it and later
        // there are at least as many. Anything else (stored bytes' runs) holds at an unchanged version only.
        const after = await this.#version(tenantId, end);
        if (grows) this.#refuse(id, { version: after, grows });
        else if (versionKey(after) === key) this.#refuse(id, { version, grows });
      }
      throw err;
    }
    if (versionKey(await this.#version(tenantId, end)) === key) this.#kept.set(tenantId, id, key, accounts, accounts.reduce((n, a) => n + a.priced.length, 0));
    return accounts;
  }

  /** A kept answer of `id`, if it was made from exactly these months (each still the one priced). */
  #keptAnswer(id: string, months: readonly PricedAccount[][]): KeptAnswer | undefined {
    const kept = this.#answers.get(id);
    if (kept === undefined || kept.months.length !== months.length || !kept.months.every((m, i) => m.deref() === months[i])) return undefined;
    return kept;
  }

  /** Keeps an answer (as the newest), the oldest dropped while there are too many or their rows pass the bound. */
  #keepAnswer(id: string, answer: KeptAnswer): void {
    this.#dropAnswer(id);
    const most = this.deps.keptAnswerRows ?? KEPT_ANSWER_ROWS;
    const rows = weight(answer);
    if (rows > most) return;
    while (this.#answers.size > 0 && (this.#answers.size >= KEPT_ANSWERS || this.#answerRows + rows > most)) this.#dropAnswer(this.#answers.keys().next().value!);
    this.#answers.set(id, answer);
    this.#answerRows += rows;
  }

  /**
   * Keeps a page's text beside its whole answer, counted with it: only while that answer is the one
   * kept (one dropped or made again since keeps no page), and not where the two would pass the
   * bound together (the page would push its own answer out).
   */
  #keepText(id: string, answer: WholeAnswer, key: string, page: CostText): void {
    const rows = textWeight(key, page);
    if (this.#answers.get(id) !== answer || weight(answer) + rows > (this.deps.keptAnswerRows ?? KEPT_ANSWER_ROWS)) return;
    this.#dropAnswer(id);
    answer.texts.set(key, page);
    answer.textRows += rows;
    this.#keepAnswer(id, answer);
  }

  #dropAnswer(id: string): void {
    this.#answerRows -= weight(this.#answers.get(id));
    this.#answers.delete(id);
  }

  #refuse(id: string, refusal: { version: DataVersion; grows: boolean }): void {
    this.#refused.delete(id);
    if (this.#refused.size >= KEPT_REFUSALS) this.#refused.delete(this.#refused.keys().next().value!);
    this.#refused.set(id, refusal);
  }

  /**
   * What a month's price depends on: the tenant's events with a timestamp before the month's end
   * (its usage by hour, and the inventory, which only looks back), and its rebuilds (of rollups or
   * the inventory, which change them without an event); see UsageStore.version.
   */
  #version(tenantId: number, end: number): Promise<DataVersion> {
    return timed(this.deps.usage.version(tenantId, end / DAY));
  }

  async #price(tenantId: number, month: string, complete: boolean, providers: readonly string[] | undefined, budget: Budget, wanted: () => Promise<void>): Promise<PricedAccount[]> {
    const { book, assignment } = this.deps.pricing;
    const { start, end } = monthBounds(month);
    const accounts = new Map<string, Account>();
    const labels = new Labels();
    /** The account of a bucket; only usage and live bytes open one (`create`), so an account exists in a month it used. */
    const accountOf = (provider: string, bucket: string | null, create = true): Account | undefined => {
      if (providers !== undefined && !providers.includes(provider)) return undefined;
      const planId = planIdFor(book, assignment, provider, bucket);
      const id = `${provider}\u0000${planId ?? ''}`;
      let a = accounts.get(id);
      if (a === undefined && create) {
        a = { provider, planId, versions: planId === undefined ? [] : book.plans.get(planId)!, keys: new KeyTable(labels), usage: new UsageBuilder(), storage: new StorageHours() };
        accounts.set(id, a);
      }
      return a;
    };
    // Requests and billable egress per key × hour: the events, every dimension, each hour a window.
    const bounds: number[] = [];
    for (let h = start / HOUR; h <= end / HOUR; h++) bounds.push(h);
    const filters = providers === undefined ? {} : { provider: [...providers] };
    for (let first = 0; first + 1 < bounds.length; first += HOURS_PER_READ) {
      // Windows numbered from 0 in each read, each an hour.
      const spans = bounds.slice(first, Math.min(first + HOURS_PER_READ, bounds.length - 1)).map((hour, window) => ({ window, from: hour, to: hour + 1, sign: 1 as const }));
      await wanted();
      const usage = await timed(this.deps.usage.query(tenantId, { terms: [{ shape: EVENTS, spans }], groupBy: [...DIMENSIONS], filters }));
      // Counted before its rows are added: a day past the bound is not.
      spend(budget, usage.length, month, (b, m) => new UsageTooLarge(b, m));
      addUsage(usage, (window) => bounds[first + window]! * HOUR, labels, accountOf);
    }

    await this.#addStorage(tenantId, start, end, accountOf, accounts, budget, month, wanted);

    const out: PricedAccount[] = [];
    for (const a of accounts.values()) {
      await wanted();
      const runs = a.storage.runs();
      spend(budget, runs.length, month);
      // A run is a KeyHour as it is (its StorageKey an Attribution with a provider): no copy of millions.
      const quantities: readonly KeyHour[] = runs;
      const priced =
        a.planId === undefined
          ? unpricedColumns(a.keys, a.usage, quantities)
          : priceColumns({ month, versions: a.versions, keys: a.keys, usage: a.usage, quantities, ...(a.peaks === undefined ? {} : { dailyPeakBytes: a.peaks }), monthComplete: complete });
      out.push(pricedAccount(a.provider, month, priced));
    }
    return out;
  }

  /** Stored bytes from the inventory, and the intervals behind minimum sizes, durations and daily peaks. */
  async #addStorage(
    tenantId: number,
    start: number,
    end: number,
    accountOf: (provider: string, bucket: string | null, create?: boolean) => Account | undefined,
    accounts: ReadonlyMap<string, Account>,
    budget: Budget,
    month: string,
    wanted: () => Promise<void>,
  ): Promise<void> {
    const feed = this.deps.storage;
    const route = <T extends { key: StorageKey }>(items: readonly T[], create = false) => {
      const byAccount = new Map<Account, T[]>();
      for (const item of items) {
        const a = accountOf(item.key.provider ?? '', item.key.bucket, create);
        if (a === undefined) continue;
        const list = byAccount.get(a);
        if (list === undefined) byAccount.set(a, [item]);
        else list.push(item);
      }
      return byAccount;
    };
    await wanted();
    // In a block: the feed's rows (millions of objects at 10M events) are garbage once they are levels.
    const { used, bucketsOf } = await (async () => {
      const live = await feed.storageDeltas(tenantId, start, end);
      // Before building runs from them: a key's runs number at most its delta rows, twice, and one.
      spend(budget, live.opening.length + live.deltas.length, month);
      const openings = route(live.opening, true);
      const deltas = route(live.deltas, true);
      const accounts = new Set([...openings.keys(), ...deltas.keys()]);
      for (const a of accounts) addLiveBytes(a.storage, { opening: openings.get(a) ?? [], deltas: deltas.get(a) ?? [] }, start, end);
      const buckets = new Map<Account, Set<string>>();
      for (const [a, list] of [...openings, ...deltas]) {
        const set = buckets.get(a) ?? new Set<string>();
        for (const i of list) set.add(i.key.bucket ?? '');
        buckets.set(a, set);
      }
      return { used: accounts, bucketsOf: buckets };
    })();

    const priced = [...used].filter((a) => a.planId !== undefined);
    const most = (f: (p: PricePlan) => number) => Math.max(0, ...priced.flatMap((a) => a.versions.map(f)));
    // The providers of the accounts (opened so far, the ones intervals are routed to) a plan with `f` > 0 prices:
    // the other intervals would add nothing (most of a month's ended versions, where only one provider has a minimum duration).
    const providersWith = (f: (p: PricePlan) => number) => [...new Set([...accounts.values()].filter((a) => a.versions.some((p) => f(p) > 0)).map((a) => a.provider))];
    const smallest = most((p) => p.storage.minimumObjectBytes);
    await wanted();
    if (smallest > 0) {
      // From a second before the month: one ended at its first instant is still in the 00:00 snapshot.
      const filter = { smallerThan: BigInt(smallest), providers: providersWith((p) => p.storage.minimumObjectBytes) };
      for (const [a, list] of route(await feed.storageIntervals(tenantId, start - 1, end, filter))) {
        addSmallObjects(a.storage, list, (hour) => BigInt(versionAt(a.versions, hour)?.storage.minimumObjectBytes ?? 0), start, end);
      }
    }
    const youngest = most((p) => p.storage.minimumDays);
    await wanted();
    if (youngest > 0) {
      // From a second before the month: a version ended at its first instant is alive in [start - 1, end).
      const filter = { endedYoungerThan: youngest * DAY, providers: providersWith((p) => p.storage.minimumDays) };
      for (const [a, list] of route(await feed.storageIntervals(tenantId, start - 1, end, filter))) {
        addEarlyDeletes(a.storage, list, (hour) => {
          const plan = versionAt(a.versions, hour);
          return { seconds: (plan?.storage.minimumDays ?? 0) * DAY, objectBytes: BigInt(plan?.storage.minimumObjectBytes ?? 0) };
        }, start, end);
      }
    }
    const peaked = priced.filter((a) => a.versions[0]!.storage.metering === 'daily-peak');
    await wanted();
    if (peaked.length > 0) {
      const buckets = [...new Set(peaked.flatMap((a) => [...(bucketsOf.get(a) ?? [])]))];
      for (const [a, list] of route(await feed.storageIntervals(tenantId, start, end, { buckets }))) {
        if (peaked.includes(a)) a.peaks = dailyPeaks(list, start, end);
      }
    }
  }
}


/** A group's sort key as the usage cursor keeps one: its dimensions, then plan, currency and flags. */
function sortValues(g: GroupedCost, groupBy: readonly Dimension[]): (string | null)[] {
  return [...groupBy.map((d) => g.dimensions[d] ?? null), g.planId, g.currency, g.unallocated ? '1' : null, g.unpriced ? '1' : null];
}
