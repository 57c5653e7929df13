/**
 * The SQLite store: commits go to a writer thread with its own connection; reads and key writes use
 * a connection on the main thread. Both connections run in WAL mode with synchronous=FULL.
 */
import { StoreUnavailableError, serverEventId } from '../types.js';
import type {
  ApiKeyRecord, CommitUnit, EventOutcome, EventPage, EventQuery, KeyStore, NewApiKey, QuarantineEntry,
  QuarantineQuery, QuarantineStore, Store,
} from '../types.js';
import { DEFAULT_BUSY_TIMEOUT_MS, openConnection, toStoreError } from './connection.js';
import type { Connection } from './connection.js';
import { SqliteKeys } from './keys.js';
import { packUnit } from './layout.js';
import { migrate } from './migrate.js';
import { MIGRATIONS } from './migrations.js';
import { QuarantineReader } from './quarantine.js';
import { EventReader } from './read-events.js';
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
}

export interface ConnectionSettings {
  journalMode: string;
  /** 2 is FULL. */
  synchronous: number;
  busyTimeoutMs: number;
}

export class SqliteStore implements Store {
  readonly backend = 'sqlite' as const;
  readonly keys: KeyStore;
  readonly quarantine: QuarantineStore;
  readonly #db: Connection;
  readonly #writer: WriterThread;
  readonly #events: EventReader;
  #closed = false;

  constructor(db: Connection, writer: WriterThread) {
    this.#db = db;
    this.#writer = writer;
    this.#events = new EventReader(db);
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
  }

  commit(unit: CommitUnit, deadline = Infinity): Promise<EventOutcome[]> {
    const { packed, transfer } = packUnit(unit);
    // Only the client ids are kept while the writer works, not the events: they may die young.
    const clientIds = unit.events.map(({ event }) => event.eventId);
    return this.#writer.request({ type: 'commit', unit: packed, deadline }, transfer).then((result) => {
      const seqs = result as Float64Array;
      return clientIds.map((eventId, i): EventOutcome => ({ eventId: eventId ?? serverEventId(seqs[i]!), duplicate: seqs[i] === 0 }));
    });
  }

  async listEvents(tenantId: number, query: EventQuery): Promise<EventPage> {
    if (this.#closed) throw new StoreUnavailableError('the store is closed');
    try {
      return await this.#events.list(tenantId, query);
    } catch (err) {
      // Closed while the walk was yielding.
      if (this.#closed) throw new StoreUnavailableError('the store is closed', { cause: err });
      throw toStoreError('event read', err);
    }
  }

  async checkWritable(): Promise<void> {
    await this.#writer.request({ type: 'check' });
  }

  /** SQLite is served by one process (more workers need PostgreSQL): while open, it owns the jobs. */
  async claimJobs(): Promise<boolean> {
    return !this.#closed;
  }

  /**
   * Runs `PRAGMA <source>` on the writer's connection, for diagnostics and tests. A setting lasts
   * until that connection is reopened, which happens after any failed write.
   */
  async writerPragma(source: string): Promise<number | string | null> {
    return (await this.#writer.request({ type: 'pragma', source })) as number | string | null;
  }

  /** The durability settings in effect on both connections. */
  async settings(): Promise<{ reader: ConnectionSettings; writer: ConnectionSettings }> {
    const read = async (pragma: (source: string) => Promise<unknown>): Promise<ConnectionSettings> => ({
      journalMode: (await pragma('journal_mode')) as string,
      synchronous: (await pragma('synchronous')) as number,
      busyTimeoutMs: (await pragma('busy_timeout')) as number,
    });
    return {
      reader: await read((source) => this.#run('pragma', () => this.#db.pragma(source, { simple: true }))),
      writer: await read((source) => this.writerPragma(source)),
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
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

const DEFAULT_MAX_GROUP_EVENTS = 10_000;

/** Opens (creating or migrating as needed) the database and starts its writer thread. */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<SqliteStore> {
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
    migrate(db, MIGRATIONS, () => Math.floor(Date.now() / 1000));
  } catch (err) {
    db.close();
    throw toStoreError('migration', err);
  }
  const writer = new WriterThread({ path: options.path, busyTimeoutMs, maxGroupEvents: options.maxGroupEvents ?? DEFAULT_MAX_GROUP_EVENTS }, options.logger);
  const store = new SqliteStore(db, writer);
  try {
    // Opens the writer's connection now, so a store that cannot write fails here rather than later.
    await store.checkWritable();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}
