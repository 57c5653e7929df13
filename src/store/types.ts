/**
 * The store ports: small capability interfaces (event log, keys, quarantine, health), each what one
 * consumer needs from a database and nothing more. Each backend (sqlite/, postgres/) implements all
 * of them; test/store/contract/ checks each port on both the same way. A new capability (usage
 * rollups, say) is a new port, not a wider interface. Times are Unix epoch seconds throughout.
 */
import type { ActionName, EventRecord, NormalizedEvent } from '../events/catalogue.js';
import { SERVER_EVENT_ID_PREFIX } from '../events/catalogue.js';
import type { FieldError } from '../events/field-error.js';
import type { Dimension, UsageTerm } from '../usage/shapes.js';

export interface EventToStore {
  tenantId: number;
  receivedAt: number;
  event: NormalizedEvent;
}

export interface QuarantineInput {
  tenantId: number;
  receivedAt: number;
  /** Error code from src/errors.ts, e.g. BM_ERR_EVENT_INVALID. */
  code: string;
  errors: FieldError[];
  /** Route the input came in on, e.g. `POST /s3/batch`. */
  source: string;
  /** Position in the batch, when the input was one element of a batch. */
  index?: number;
  /** The input as received (the event's JSON, or the raw body), cut to the configured bound. */
  body: Buffer;
  truncated: boolean;
}

/** One atomic write: everything in it is committed together, or nothing is. */
export interface CommitUnit {
  events: EventToStore[];
  quarantine: QuarantineInput[];
  /** Quarantine entries that this unit's events replay, marked replayed in the same transaction. */
  replayed?: { ids: number[]; at: number };
}

/**
 * Outcome of one event of a unit, in the order of `unit.events`. `duplicate` means an event with the
 * same (tenant, eventId) is already stored (earlier, or earlier in the same unit).
 * Events without a client eventId are always stored and get a server-assigned id that increases with
 * arrival within the tenant (SERVER_EVENT_ID_PREFIX + a fixed-width encoding of a never-reused number
 * of the tenant's own sequence: it tells nothing of other tenants' events).
 */
export interface EventOutcome {
  eventId: string;
  duplicate: boolean;
}

export interface StoredEvent extends EventRecord {
  eventId: string;
  receivedAt: number;
}

export interface EventQuery {
  action?: ActionName;
  customerId?: string;
  /** Event timestamp lower bound, inclusive. */
  from?: number;
  /** Event timestamp upper bound, exclusive. */
  to?: number;
  /** 1..1000 */
  limit: number;
  /** Opaque cursor from a previous page's nextCursor (of the same tenant, with or without from/to alike). */
  cursor?: string;
}

export interface EventPage {
  /** Newest first: by arrival order; with `from` or `to`, by event timestamp, then arrival. */
  events: StoredEvent[];
  nextCursor: string | null;
}

/** What a key may do: `ingest` the ingestion paths, `read` the /v1 API, `all` both. */
export type KeyScope = 'ingest' | 'read' | 'all';
export const KEY_SCOPES: readonly KeyScope[] = ['ingest', 'read', 'all'];

export interface ApiKeyRecord {
  id: string;
  tenantId: number;
  tenantName: string;
  scope: KeyScope;
  createdAt: number;
  revokedAt: number | null;
}

export interface NewApiKey {
  /** Public key id (shown by `keys list`, used by `keys revoke`). */
  id: string;
  /** Tenant name; the tenant is created if it does not exist. */
  tenantName: string;
  /** SHA-256 of the full key; the key itself is never stored. */
  hash: Buffer;
  /** Default `all`. */
  scope?: KeyScope;
  createdAt: number;
}

export interface KeyStore {
  create(key: NewApiKey): Promise<ApiKeyRecord>;
  /** Creates the key only when no key exists at all (first start); atomic across processes. */
  createIfNone(key: NewApiKey): Promise<ApiKeyRecord | undefined>;
  /** The active (not revoked) key with this hash. */
  findActiveByHash(hash: Buffer): Promise<ApiKeyRecord | undefined>;
  list(): Promise<ApiKeyRecord[]>;
  /** false when no such key, or already revoked. */
  revoke(id: string, at: number): Promise<boolean>;
}

export interface QuarantineEntry extends QuarantineInput {
  id: number;
  tenantName: string;
  replayedAt: number | null;
}

export interface QuarantineQuery {
  tenantId?: number;
  /** Entries with id greater than this (ascending id order). */
  afterId?: number;
  /** Descending id order (newest first) instead; `afterId` is then not used. */
  newestFirst?: boolean;
  /** With `newestFirst`: entries with id less than this (the next page of a newest-first list). */
  beforeId?: number;
  limit: number;
  includeReplayed: boolean;
}

export interface QuarantineStore {
  list(query: QuarantineQuery): Promise<QuarantineEntry[]>;
  get(id: number): Promise<QuarantineEntry | undefined>;
  /** How many entries this tenant added at or after `since` (replayed ones included). */
  countSince(tenantId: number, since: number): Promise<number>;
  /** Deletes entries received before `before`; returns how many. */
  purgeBefore(before: number): Promise<number>;
}

/** The events: written in atomic units (with their quarantine entries), listed per tenant. */
export interface EventLog {
  /**
   * Commits the unit durably (fsync / COMMIT returned) before resolving. Rejects with
   * StoreUnavailableError on failure. `deadline` (epoch milliseconds): a store that queues units
   * itself (SQLite's writer thread) does not begin one after it, and rejects it instead, because its
   * caller has been told it failed; a write already begun may still finish.
   */
  commit(unit: CommitUnit, deadline?: number): Promise<EventOutcome[]>;
  /** `signal`: its caller left; the read rejects with ReadAbortedError (README, "Reads whose client left"). */
  listEvents(tenantId: number, query: EventQuery, signal?: AbortSignal): Promise<EventPage>;
}

export interface Health {
  readonly backend: 'sqlite' | 'postgres';
  /** Resolves when the store can accept writes now; rejects otherwise. */
  checkWritable(): Promise<void>;
}

/**
 * Background work that must run once, not on every node or cluster worker (the quarantine purge;
 * rollups later): only the process that owns the jobs runs it.
 */
export interface JobOwnership {
  /** Whether this process owns the background jobs now; claims them when no live process does. */
  claimJobs(): Promise<boolean>;
}

/** One database behind every port; what runtime.ts opens, hands out port by port, and closes. */
export interface Store extends EventLog, Health, JobOwnership {
  readonly keys: KeyStore;
  readonly quarantine: QuarantineStore;
  readonly usage: UsageStore;
  readonly inventory: InventoryStore;
  readonly storageFeed: StorageFeed;
  /** How another thread of this process opens reads of this store of its own (the cost thread). */
  readonly threadReads: ThreadReadsSource;
  /** The reads waiting now, and those whose caller left, counted since the store opened. */
  readCounts(): ReadCounts;
  close(): Promise<void>;
}

export interface ReadCounts {
  /** Reads waiting for a reader now (SQLite: a reader thread; PostgreSQL: a pooled connection, writes included). */
  waiting: number;
  /** Reads whose caller left before they began: never run. */
  abandonedWaiting: number;
  /** Reads whose caller left while they ran: stopped (SQLite: their thread replaced; PostgreSQL: the query cancelled). */
  abandonedRunning: number;
}

/** What a thread is given to open its own reads of a store (store/thread-reads.ts); plain data, it crosses threads. */
export type ThreadReadsSpec =
  | { backend: 'sqlite'; path: string; busyTimeoutMs: number }
  | { backend: 'postgres'; url: string; foldBeforeReadMs: number };

/** What a read waits for first: every event committed before it folded into the rollups ('usage') or applied to the inventory. */
export type CaughtUpFor = 'usage' | 'inventory';

export interface ThreadReadsSource {
  readonly spec: ThreadReadsSpec;
  /**
   * SQLite only: the catch-up a read waits for, run here (folds and the inventory's outbox are the
   * writer thread's, which only this thread talks to). PostgreSQL's run from any connection.
   */
  readonly caughtUp?: (what: CaughtUpFor) => Promise<void>;
}

/** A thread's own reads of the store: what the cost service reads, each caught up first as the store's own. */
export interface ThreadReads {
  readonly usage: Pick<UsageStore, 'query' | 'version'>;
  readonly storage: StorageFeed;
  close(): Promise<void>;
}

/** Thrown by stores when the database cannot take the write (unreachable, disk full, locked...). */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Encodes a sequence number as a server event id whose string order is its numeric order. */
export function serverEventId(seq: number | bigint): string {
  return SERVER_EVENT_ID_PREFIX + seq.toString(36).padStart(13, '0');
}

/** Thrown by listEvents when the cursor was not made by this store (a client error, answered 400). */
export class InvalidCursorError extends Error {
  override readonly name = 'InvalidCursorError';
}

/**
 * Thrown by a read that ran past its time budget: it was stopped, and nothing of it is returned.
 * A client error in effect (the query is too wide for one request), answered with its own code.
 */
export class ReadTimeoutError extends Error {
  override readonly name = 'ReadTimeoutError';
}

/**
 * Thrown by a read whose sums pass what the store's SQL can add: wide sums (wide.ts) hold 2^39 events
 * of the largest size in one row, and a read's products of them by hours stay within 64 bits far
 * beyond any real store, but a row set past that (by hand, or in another century) cannot be summed
 * exactly. Only that tenant's read is refused (the writes never sum in SQL past a row).
 */
export class SumOutOfRangeError extends Error {
  override readonly name = 'SumOutOfRangeError';
  constructor() {
    super('a sum of this answer passes what the store can add exactly (64-bit integers in SQL)');
  }
}

/** Thrown by a read whose caller left (its `signal` aborted): not begun, or stopped; nobody reads its answer. */
export class ReadAbortedError extends Error {
  override readonly name = 'ReadAbortedError';
}

/**
 * How long a read may spend folding (usage) or applying (the inventory) what was committed before it. A large backlog (a bulk load, a
 * long outage of the job owner) is the background jobs' to work off: a read that would wait longer
 * answers 503 with this error, rather than hold its connection until the HTTP server's idle timeout
 * (twice --request-timeout-ms) drops it without an answer.
 */
export const FOLD_BEFORE_READ_MS = 20_000;

export class FoldBacklogError extends ReadTimeoutError {
  constructor(what: string) {
    super(`${what} (the background job works off the backlog)`);
  }
}

/** A read past its budget behind the object inventory's catch-up (both stores). */
export const inventoryBacklog = (): FoldBacklogError => new FoldBacklogError('events committed before this read are still being applied to the object inventory');

/** One numbered schema step of a backend (each backend keeps its own list in `<backend>/migrations.ts`). */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** A rollup query, already routed: the service has cut the windows and chosen the shapes (planUsage). */
export interface UsageStoreQuery {
  /** Summed with their signs into one row per window and group. */
  terms: UsageTerm[];
  groupBy: Dimension[];
  /** Per dimension, the values any of which matches; '' matches events without one. */
  filters: Partial<Record<Dimension, string[]>>;
}

/** A row of usage: its window and groups, and its measures. */
export interface UsageStoreRow {
  /** Index of the window in the query's bounds. */
  window: number;
  /** One value per groupBy dimension, in its order; null where the events had none. */
  values: (string | null)[];
  /** In shapes.ts MEASURES order. */
  measures: bigint[];
}

/**
 * Rows as columns: answers run to hundreds of thousands of rows, which cross from a reader thread
 * as transferred typed arrays and are written as text column by column, never as row objects.
 */
export interface UsageColumns {
  length: number;
  window: Int32Array;
  /** Per groupBy dimension: each row's value, as an index into that dimension's `labels`. */
  values: Int32Array[];
  /** Per groupBy dimension: its distinct values (null: the events had none). */
  labels: (string | null)[][];
  /** Per measure: each row's value (BigInt64Array from the stores; storage sums may not fit 64 bits). */
  measures: ArrayLike<bigint>[];
}

/** One UTC day as reconcile sees it; measures in MEASURES order. */
export interface UsageDayCheck {
  day: number;
  receipts: { received: bigint; stored: bigint; duplicates: bigint; rejected: bigint };
  /** Events stored that arrived this day, counted from the raw events. */
  storedByArrival: bigint;
  /** The measures of the events whose timestamp is in this day, from the raw events. */
  events: bigint[];
  /** The same from each rollup shape, by shape name. */
  rollups: Record<string, bigint[]>;
}

/**
 * What a tenant's answers about times before a UTC day are computed from, as a process that keeps
 * them compares it (usage/service.ts, costs/service.ts): equal parts, the same data.
 */
export interface DataVersion {
  /**
   * The tenant's events with a timestamp before the day. Events are only ever added (duplicates are
   * not stored), so an unchanged count is an unchanged set of events.
   */
  events: bigint;
  /**
   * The tenant's rebuilds (of its usage rollups or its inventory, or of every tenant's), whatever
   * their range: a rebuild rewrites what answers are computed from without adding an event, so the
   * count alone would not change, and answers computed from the damaged rows would be served on.
   */
  rebuilds: bigint;
}

/** How far the usage rollups are behind the events. */
export interface UsageLag {
  /** Events stored and not folded into the rollups yet. */
  pendingEvents: number;
  /** Seconds since the oldest of them was received; 0 when none. */
  oldestSeconds: number;
}

/**
 * Usage: rollups folded after commit from a feed of the stored events that misses nothing (receipts
 * are kept in each event commit), read by routed queries; checked and rebuilt from the events. Every
 * read folds what is pending first, so its answer holds every event committed before it began.
 */
export interface UsageStore {
  query(tenantId: number, query: UsageStoreQuery, signal?: AbortSignal): Promise<UsageColumns>;
  /** Days [fromDay, toDay) (days since the epoch, UTC) that have anything in receipts, events or rollups. */
  reconcile(tenantId: number, fromDay: number, toDay: number, signal?: AbortSignal): Promise<UsageDayCheck[]>;
  /**
   * The tenant's DataVersion before UTC day `toDay` (days since the epoch), in one read, folded first
   * as `query` is: read for every usage and cost answer, before it and again after it.
   */
  version(tenantId: number, toDay: number, signal?: AbortSignal): Promise<DataVersion>;
  /**
   * Recomputes the rollups of hours [fromHour, toHour) from the events; safe while ingestion runs.
   * Counts a rebuild of the tenant (of every tenant when null: DataVersion.rebuilds) in the same transaction.
   */
  rebuild(tenantId: number | null, fromHour: number, toHour: number): Promise<void>;
  /**
   * Folds every event committed before the call into the rollups; safe from any process (one at a time).
   * `background`: the job owner's periodic call, which a store may pass while it is still committing
   * (PostgreSQL: usage-fold.ts BUSY_FOLD_MS); reads fold first, so their answers stay exact.
   */
  catchUp(options?: { background?: boolean }): Promise<void>;
  lag(): Promise<UsageLag>;
}

/**
 * Who owns a stored interval: the attribution of the event that created it (dictionary values, null
 * where the event had none); `action` is the creating kind.
 */
export interface StorageKey {
  provider: string | null;
  bucket: string | null;
  customerId: string | null;
  featureId: string | null;
  clientType: string | null;
  clientId: string | null;
  action: ActionName;
}

/**
 * One key's change of live bytes within one hour, as the inventory keeps it: `bytes` is the net
 * change (+size where an interval starts, −size where it ends) and `tailByteSeconds` is
 * Σ ±size × (hour end − t), so that with `open` the key's live bytes at the hour's start,
 * byte-seconds in the hour = open × 3600 + tailByteSeconds, and the next hour opens at open + bytes.
 * Live bytes are the known sizes of live versions plus parts of uploads in progress.
 */
export interface StorageDeltaRow {
  /** Unix seconds of the hour's start. */
  hour: number;
  key: StorageKey;
  bytes: bigint;
  tailByteSeconds: bigint;
}

/** An object version, an upload part or a delete marker, from its creating event to its end. */
export interface StorageInterval {
  kind: 'version' | 'part' | 'marker';
  key: StorageKey;
  objectKey: string;
  versionId: string | null;
  /** null when unknown (a copy whose source the inventory does not know). */
  size: bigint | null;
  start: number;
  /** null while live. */
  end: number | null;
  createdBy: string;
  endedBy: string | null;
}

export interface StorageIntervalFilter {
  /** Only these buckets (all when absent). */
  buckets?: string[];
  /** Only intervals whose key has one of these providers ('' for none; all when absent). */
  providers?: string[];
  /** Only intervals with a known size below this many bytes (minimum object size). */
  smallerThan?: bigint;
  /** Only intervals that ended, within [from, to), less than this many seconds after they started (minimum duration). */
  endedYoungerThan?: number;
}

/** What cost reads from the inventory (issue 15 over issue 14): stored bytes per key and hour, and the intervals behind them. */
export interface StorageFeed {
  /** Every key's live bytes at `from` (non-zero only), then every delta row of hours in [from, to), ascending by hour. */
  storageDeltas(tenantId: number, from: number, to: number): Promise<{ opening: { key: StorageKey; bytes: bigint }[]; deltas: StorageDeltaRow[] }>;
  /** The intervals alive at some time in [from, to) that pass the filter. */
  storageIntervals(tenantId: number, from: number, to: number, filter: StorageIntervalFilter): Promise<StorageInterval[]>;
}

/** A storage query, already routed like a usage one: window bounds in hours since the epoch, ascending. */
export interface StorageStoreQuery {
  bounds: number[];
  groupBy: Dimension[];
  filters: Partial<Record<Dimension, string[]>>;
}

/** Per window and group, before folding (inventory/measures.ts): sums over the group's delta rows. */
export interface StorageWindowSums {
  /** -1: every hour before the first window (the opening level). */
  window: number;
  values: (string | null)[];
  /** Σbytes, Σtail, Σbytes × (window end − hour − 1) in hours, Σobjects, Σmarkers, Σunknown, ΣpartBytes. */
  sums: bigint[];
}

export interface ObjectsStoreQuery {
  bucket: string;
  prefix?: string;
  /** Epoch seconds: entries alive at this instant (created at or before it, ended after it or not at all). */
  at: number;
  customerId?: string;
  /** false: only each key's current version (none when it is a delete marker); true: every live version and marker. */
  includeVersions: boolean;
  limit: number;
  /** After this (objectKey, entry id), in (objectKey, newest first) order. */
  after?: { objectKey: string; id: number };
}

export interface InventoryEntryRecord {
  id: number;
  objectKey: string;
  versionId: string | null;
  deleteMarker: boolean;
  size: bigint | null;
  created: { at: number; eventId: string; action: ActionName; provider: string | null; customerId: string | null; featureId: string | null; clientType: string | null; clientId: string | null };
  ended: { at: number; eventId: string } | null;
}

/** How far the inventory is behind the events (its outbox, consumed by catchUp). */
export interface InventoryLag {
  /** Outbox rows not yet applied. */
  pending: number;
  /** Seconds since the oldest of them was written; 0 when none. */
  oldestSeconds: number;
}

export interface InventoryDifference {
  tenantId: number;
  check: string;
  expected: string;
  actual: string;
}

/**
 * The object inventory (issue 14): entries derived from the events through an outbox written in each
 * event transaction (so nothing is missed), applied by catchUp; every read catches up first, so its
 * answer holds every event committed before it began.
 */
export interface InventoryStore {
  /**
   * Applies every pending outbox row; safe from any process (one at a time). `background`: the job
   * owner's periodic call, paced while this process commits (background-pace.ts).
   */
  catchUp(options?: { background?: boolean }): Promise<void>;
  lag(): Promise<InventoryLag>;
  storage(tenantId: number, query: StorageStoreQuery, signal?: AbortSignal): Promise<StorageWindowSums[]>;
  objects(tenantId: number, query: ObjectsStoreQuery, signal?: AbortSignal): Promise<InventoryEntryRecord[]>;
  /** Replays the tenant's (every tenant's when null) events in memory and lists where the stored inventory differs. */
  verify(tenantId: number | null): Promise<InventoryDifference[]>;
  /**
   * Rebuilds the inventory of a tenant (every tenant when null) from its events, and counts the
   * rebuild (DataVersion.rebuilds) in the same transaction.
   */
  rebuild(tenantId: number | null): Promise<void>;
}
