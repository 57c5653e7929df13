/**
 * The SQLite store: commits go to a writer thread with its own connection; the derived data (usage
 * rollups, object inventory) is written to a file of its own by the derived thread (derived.ts); event reads that filter
 * run on reader threads (reader-pool.ts), each within a time budget; small unfiltered pages, key and
 * quarantine reads and key writes use a connection on the main thread. All connections run in WAL mode; the writing ones with synchronous=FULL.
 */
import { FOLD_BEFORE_READ_MS, FoldBacklogError, StoreUnavailableError, inventoryBacklog, serverEventId } from '../types.js';
import type {
  ApiKeyRecord, CommitUnit, EventOutcome, EventPage, EventQuery, KeyStore, NewApiKey, QuarantineEntry,
  QuarantineQuery, QuarantineStore, ReadCounts, Store, UsageStore, UsageStoreQuery, InventoryStore, StorageFeed, InventoryDifference, ThreadReadsSource,
} from '../types.js';
import { DEFAULT_BUSY_TIMEOUT_MS, connectionSettings, openConnection, toStoreError } from './connection.js';
import type { Connection, ConnectionSettings } from './connection.js';
import { SqliteKeys } from './keys.js';
import { packUnit } from './layout.js';
import { migrate } from './migrate.js';
import { DERIVED_MOVE_VERSION, DERIVED_SCHEMA_SQL, MIGRATIONS } from './migrations.js';
import { checkDerived, openDerived } from './derived.js';
import { APPLIED_OUTBOX_ROW } from './inventory.js';
import type { DerivedCommand, DerivedData, TakenSums } from './protocol.js';
import { batchBuffers } from './usage-sums.js';
import { QuarantineReader } from './quarantine.js';
import { ReadBudget, epochNow } from './read-budget.js';
import { byDeadline } from '../deadline.js';
import { EventReader } from './read-events.js';
import { ReaderPool } from './reader-pool.js';
import { UNFOLDED } from './usage-sql.js';
import { INVENTORY_MORE } from './protocol.js';
import { checkedSpan } from '../inventory-step.js';
import { BackgroundPace } from '../background-pace.js';
import { WriterThread } from './writer.js';
import type { WriterLogger } from './writer.js';

export interface SqliteStoreOptions {
  /** Database file; created (with its schema) if missing. */
  path: string;
  logger?: WriterLogger;
  /** How long a write waits for another connection's lock before failing (default 5 s). */
  busyTimeoutMs?: number;
  /** Most events the writer commits in one transaction (default 10,000). */
  maxGroupEvents?: number;
  /** Reader threads for event reads (default 2). */
  readers?: number;
  /** How long one event read may take, waiting for a reader included, before it is stopped (default 2,000 ms). */
  readBudgetMs?: number;
  /** false only in the bench (ingest cost without usage); default true. */
  usage?: boolean;
  /** false only in the bench (ingest cost of the usage rollups alone): events are stored without the inventory's feed. */
  inventory?: boolean;
  /** How long a usage read may fold a backlog before answering 503 (default FOLD_BEFORE_READ_MS). */
  foldBeforeReadMs?: number;
  /** Seqs of pending events one inventory catch-up step applies (default CATCH_UP_SPAN; tests take small steps). */
  catchUpSpan?: number;
  /** Tests only: most rows of usage sums the writer keeps (default MAX_SUM_ROWS; it asks for a fold at a quarter of them). */
  usageSumRows?: number;
}


export class SqliteStore implements Store {
  readonly backend = 'sqlite' as const;
  readonly keys: KeyStore;
  readonly quarantine: QuarantineStore;
  readonly usage: UsageStore;
  readonly inventory: InventoryStore;
  readonly storageFeed: StorageFeed;
  readonly threadReads: ThreadReadsSource;
  readonly #db: Connection;
  readonly #writer: WriterThread;
  readonly #derived: WriterThread<DerivedCommand>;
  readonly #readers: ReaderPool;
  readonly #events: EventReader;
  readonly #readBudgetMs: number;
  #closed = false;
  /** When this process last committed events (performance.now()): the inventory's background pace. */
  #committedAt = Number.NEGATIVE_INFINITY;

  constructor(db: Connection, writer: WriterThread, derived: WriterThread<DerivedCommand>, readers: ReaderPool, readBudgetMs: number, foldBeforeReadMs = FOLD_BEFORE_READ_MS) {
    this.#db = db;
    this.#writer = writer;
    this.#derived = derived;
    this.#readers = readers;
    this.#events = new EventReader(db);
    this.#readBudgetMs = readBudgetMs;
    const keys = new SqliteKeys(db);
    const quarantine = new QuarantineReader(db);
    this.keys = {
      create: (key: NewApiKey) => this.#run('key write', () => keys.create(key)),
      createIfNone: (key: NewApiKey) => this.#run('key write', () => keys.createIfNone(key)),
      findActiveByHash: (hash: Buffer) => this.#run('key read', () => keys.findActiveByHash(hash)),
      list: () => this.#run<ApiKeyRecord[]>('key read', () => keys.list()),
      revoke: (id: string, at: number) => this.#run('key write', () => keys.revoke(id, at)),
    };
    this.quarantine = {
      list: (query: QuarantineQuery) => this.#run<QuarantineEntry[]>('quarantine read', () => quarantine.list(query)),
      get: (id: number) => this.#run('quarantine read', () => quarantine.get(id)),
      countSince: (tenantId: number, since: number) => this.#run('quarantine read', () => quarantine.countSince(tenantId, since)),
      // On the writer thread: a large purge must not stall the event loop.
      purgeBefore: async (before: number) => (await this.#writer.request({ type: 'purgeQuarantine', before })) as number,
    };
    // Folds on the derived thread, a step per request: the writer's sums (taken from it, a message
    // between commits), or a chunk of the events they do not cover. Commits never wait for a fold.
    // The first take fixes the goal: the last seq stored then, which its sums reach when they cover
    // the run since the last take (one step; a goal read later, with commits gone on meanwhile, took
    // a second fold of nearly as many keys). A read gives up at its deadline.
    const foldUsage = async (deadline = Infinity) => {
      let goal: number | undefined;
      for (;;) {
        const { sums, stored } = (await this.#writer.request({ type: 'takeSums' })) as TakenSums;
        goal ??= stored;
        const more = await this.#derived.request({ type: 'foldUsage', upTo: goal, sums }, sums === null ? [] : batchBuffers(sums));
        if (more === null) return;
        if (epochNow() > deadline) throw new FoldBacklogError(`events up to seq ${goal} committed before this read are still being folded into the rollups`);
      }
    };
    // The writer's sums past their fold threshold (or a commit it could not sum): folded now, not at
    // the next catch-up, so that the sums never stop short of their bound and leave commits to the
    // slower fold from the events. Asked once per run of sums. A failure is left to the catch-up,
    // which retries and reports it (and a read folds first anyway).
    this.#writer.onFoldSums = () => void foldUsage().catch(() => {});
    const usageLag = db.prepare(`SELECT (SELECT value FROM counters WHERE name = 'event_seq') - (SELECT value FROM derived_counters WHERE name = 'usage_seq'),
      coalesce(unixepoch() - (SELECT timestamp + received_after FROM events WHERE ${UNFOLDED} ORDER BY seq LIMIT 1), 0)`).raw(true);
    // On reader threads: an answer over months of rollups must not hold the event loop. Each read
    // folds what is pending first, so it sees every event committed before it.
    this.usage = {
      query: async (tenantId: number, query: UsageStoreQuery, signal?: AbortSignal) => {
        await foldUsage(epochNow() + foldBeforeReadMs);
        return this.#readers.run('usage.query', { tenantId, query }, tenantId, USAGE_BUDGET_MS, signal);
      },
      version: async (tenantId: number, toDay: number, signal?: AbortSignal) => {
        await foldUsage(epochNow() + foldBeforeReadMs);
        return this.#readers.run('usage.version', { tenantId, toDay }, tenantId, USAGE_BUDGET_MS, signal);
      },
      reconcile: async (tenantId: number, fromDay: number, toDay: number, signal?: AbortSignal) => {
        await foldUsage(epochNow() + foldBeforeReadMs);
        return this.#readers.run('usage.reconcile', { tenantId, fromDay, toDay }, tenantId, USAGE_BUDGET_MS, signal);
      },
      catchUp: () => foldUsage(),
      lag: () =>
        this.#run('usage lag', () => {
          const [pendingEvents, oldestSeconds] = usageLag.get() as [number, number];
          // The two counters are read from two files' snapshots, taken one after the other: a fold that
          // commits between them can put the cursor past the event seq read first.
          return { pendingEvents: Math.max(0, pendingEvents), oldestSeconds: Math.max(0, oldestSeconds) };
        }),
      // On the derived thread, between folds: no fold can interleave with the delete and refill.
      rebuild: async (tenantId: number | null, fromHour: number, toHour: number) => {
        await this.#derived.request({ type: 'rebuildUsage', tenantId, fromHour, toHour });
      },
    };
    const inventoryWork = (op: 'catchUp' | 'rebuild' | 'verify', tenantId: number | null) => this.#derived.request({ type: 'inventory', op, tenantId });
    // The outbox's newest pending row (0: none pending).
    const newestOutboxRow = db.prepare(`SELECT coalesce(max(id), 0) FROM inventory_outbox WHERE id > ${APPLIED_OUTBOX_ROW}`).pluck();
    const newest = () => this.#run('inventory lag', () => newestOutboxRow.get() as number);
    // Step after step, each a request of its own: folds go between them. Up to
    // the outbox's newest row when it begins: what is committed meanwhile is for the next catch-up.
    const catchUpTo = async (upTo: number) => {
      while ((await this.#derived.request({ type: 'inventory', op: 'catchUp', tenantId: null, upTo })) === INVENTORY_MORE);
    };
    const catchUp = async () => catchUpTo(await newest());
    // Every read applies the outbox first (on the derived thread), so it sees every event committed
    // before it; past the budget it answers 503 and the catch-up runs on.
    const caughtUp = async <T>(read: () => Promise<T>): Promise<T> => {
      const upTo = await newest();
      // Nothing pending (the usual case): no wait, whatever the budget.
      if (upTo > 0) await byDeadline(catchUpTo(upTo), Date.now() + foldBeforeReadMs, inventoryBacklog);
      return read();
    };
    const pace = new BackgroundPace(() => this.#committedAt);
    this.inventory = {
      catchUp: (options) => (options?.background === true ? pace.run(catchUp) : catchUp()),
      lag: () => this.#readers.run('inventory.lag', {}, 0, USAGE_BUDGET_MS),
      storage: (tenantId, query, signal) => caughtUp(() => this.#readers.run('inventory.storage', { tenantId, query }, tenantId, USAGE_BUDGET_MS, signal)),
      objects: (tenantId, query, signal) => caughtUp(() => this.#readers.run('inventory.objects', { tenantId, query }, tenantId, USAGE_BUDGET_MS, signal)),
      verify: async (tenantId) => JSON.parse((await inventoryWork('verify', tenantId)) as string) as InventoryDifference[],
      rebuild: async (tenantId) => {
        await inventoryWork('rebuild', tenantId);
      },
    };
    this.storageFeed = {
      storageDeltas: (tenantId, from, to) => caughtUp(() => this.#readers.run('inventory.deltas', { tenantId, from, to }, tenantId, USAGE_BUDGET_MS)),
      storageIntervals: (tenantId, from, to, filter) => caughtUp(() => this.#readers.run('inventory.intervals', { tenantId, from, to, filter }, tenantId, USAGE_BUDGET_MS)),
    };
    // Another thread reads on a read-only connection of its own, after the same catch-up as these reads.
    this.threadReads = {
      spec: { backend: 'sqlite', path: db.name, busyTimeoutMs: db.pragma('busy_timeout', { simple: true }) as number },
      caughtUp: (what) => (what === 'usage' ? foldUsage(epochNow() + foldBeforeReadMs) : caughtUp(async () => undefined)),
    };
  }

  commit(unit: CommitUnit, deadline = Infinity): Promise<EventOutcome[]> {
    const { packed, transfer } = packUnit(unit);
    // Only the client ids are kept while the writer works, not the events: they may die young.
    const clientIds = unit.events.map(({ event }) => event.eventId);
    return this.#writer.request({ type: 'commit', unit: packed, deadline }, transfer).then((result) => {
      this.#committedAt = performance.now();
      const seqs = result as Float64Array;
      return clientIds.map((eventId, i): EventOutcome => ({ eventId: eventId ?? serverEventId(seqs[i]!), duplicate: seqs[i] === 0 }));
    });
  }

  listEvents(tenantId: number, query: EventQuery, signal?: AbortSignal): Promise<EventPage> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closed'));
    // Without filters a page reads exactly limit + 1 index entries and rows: up to MAIN_THREAD_ROWS
    // that is cheaper here than the hop to a reader thread, and never waits behind others' reads.
    if (query.action === undefined && query.customerId === undefined && query.limit <= MAIN_THREAD_ROWS) {
      return this.#run('event read', () => this.#events.list(tenantId, query, NO_STEPS));
    }
    return this.#readers.run('events.page', { tenantId, query }, tenantId, this.#readBudgetMs, signal);
  }

  readCounts(): ReadCounts {
    return this.#readers.counts();
  }

  async checkWritable(): Promise<void> {
    await this.#writer.request({ type: 'check' });
  }

  /**
   * Starts the derived thread with its connection now, not at the first fold: a derived file that cannot
   * be opened fails the store's open, and the thread starts, as the writer does, before the server
   * listens (a thread starts with the CPU affinity its starter has then; the bench pins the main thread
   * to one core once the server listens).
   */
  async startDerivedThread(): Promise<void> {
    await this.#derived.request({ type: 'open' });
  }

  /** SQLite is served by one process (more workers need PostgreSQL): while open, it owns the jobs. */
  async claimJobs(): Promise<boolean> {
    return !this.#closed;
  }

  /** The durability settings in effect on both connections. */
  async settings(): Promise<{ reader: ConnectionSettings; writer: ConnectionSettings }> {
    return {
      reader: await this.#run('settings', () => connectionSettings(this.#db)),
      writer: (await this.#writer.request({ type: 'settings' })) as ConnectionSettings,
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#readers.close();
    await this.#derived.close();
    await this.#writer.close();
    this.#db.close();
  }

  /** Main-connection work: synchronous, so it only needs the closed check and error mapping. */
  #run<T>(what: string, work: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closed'));
    try {
      return Promise.resolve(work());
    } catch (err) {
      return Promise.reject(toStoreError(what, err));
    }
  }
}

/** Largest unfiltered page read on the main thread (a few tenths of a millisecond). */
const MAIN_THREAD_ROWS = 100;
/** The budget of a read that takes no steps (an unfiltered page), never checked. */
const NO_STEPS = new ReadBudget(Infinity, 0);

/** How long a usage read may wait for a reader thread (its one statement then runs to the end). */
const USAGE_BUDGET_MS = 60_000;

const DEFAULT_MAX_GROUP_EVENTS = 10_000;
const DEFAULT_READERS = 2;
const DEFAULT_READ_BUDGET_MS = 2000;

/**
 * On the main connection of the events file, before any thread opens the files: the derived file
 * attached, both migrated, and the derived file checked (made afresh unless it belongs to the events).
 */
export function prepareFiles(db: Connection, path: string, now: () => number): void {
  openDerived(db, path, DERIVED_MOVE_VERSION);
  migrate(db, MIGRATIONS, now);
  checkDerived(db, DERIVED_SCHEMA_SQL);
}

export const derivedThread = (data: DerivedData, logger: WriterLogger | undefined): WriterThread<DerivedCommand> =>
  new WriterThread<DerivedCommand>(data, logger, new URL('./derived-worker.js', import.meta.url));

/** Opens (creating or migrating as needed) the database and starts its writer thread. */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<SqliteStore> {
  const catchUpSpan = options.catchUpSpan === undefined ? undefined : checkedSpan(options.catchUpSpan);
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  let db: Connection;
  try {
    db = openConnection(options.path, busyTimeoutMs);
  } catch (err) {
    throw toStoreError('open', err);
  }
  try {
    // Checkpoints stay on the writer thread, where their fsyncs do not stall the event loop.
    db.pragma('wal_autocheckpoint = 0');
    prepareFiles(db, options.path, () => Math.floor(Date.now() / 1000));
  } catch (err) {
    db.close();
    throw toStoreError('migration', err);
  }
  const writer = new WriterThread({ path: options.path, busyTimeoutMs, maxGroupEvents: options.maxGroupEvents ?? DEFAULT_MAX_GROUP_EVENTS, usage: options.usage ?? true, inventory: options.inventory ?? true, ...(options.usageSumRows === undefined ? {} : { usageSumRows: options.usageSumRows }) }, options.logger);
  const derived = derivedThread({ path: options.path, busyTimeoutMs, usage: options.usage ?? true, ...(catchUpSpan === undefined ? {} : { catchUpSpan }) }, options.logger);
  const readers = new ReaderPool({ path: options.path, busyTimeoutMs }, options.readers ?? DEFAULT_READERS);
  const store = new SqliteStore(db, writer, derived, readers, options.readBudgetMs ?? DEFAULT_READ_BUDGET_MS, options.foldBeforeReadMs);
  try {
    // Opens the writer's connection now, so a store that cannot write fails here rather than later.
    await store.checkWritable();
    await store.startDerivedThread();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}
