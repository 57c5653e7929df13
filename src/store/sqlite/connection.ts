/** Opening a SQLite connection with the settings every bucketmeter connection needs. */
import Database from 'better-sqlite3';
import { StoreUnavailableError } from '../types.js';
import { attachDerived } from './derived.js';

export type Connection = Database.Database;

export const DEFAULT_BUSY_TIMEOUT_MS = 5000;

export function openConnection(path: string, busyTimeoutMs: number): Connection {
  const db = new Database(path);
  try {
    // First, so that the journal-mode switch below waits for other connections instead of failing.
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    db.pragma('journal_mode = WAL');
    // FULL: in WAL mode every COMMIT fsyncs the WAL, so a resolved commit survives a crash or power loss.
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/**
 * A writing thread's connection and its prepared statements (`setUp`): opened at first use; after a
 * failure closed (which rolls back whatever is open) and reopened by the next request, so that
 * whatever state the error left it in (I/O error, disk full), the next try starts clean.
 */
export class ThreadConnection<S> {
  #db: Connection | undefined;
  #statements: S | undefined;

  constructor(
    private readonly path: string,
    private readonly busyTimeoutMs: number,
    private readonly setUp: (db: Connection) => S,
  ) {}

  open(): S {
    if (this.#statements !== undefined) return this.#statements;
    const db = openConnection(this.path, this.busyTimeoutMs);
    try {
      this.#statements = this.setUp(db);
    } catch (err) {
      db.close();
      throw err;
    }
    this.#db = db;
    return this.#statements;
  }

  /** The connection open() opened. */
  get db(): Connection {
    return this.#db!;
  }

  reset(): void {
    const db = this.#db;
    this.#db = undefined;
    this.#statements = undefined;
    try {
      db?.close();
    } catch {
      // Closing is best effort here: the handle is dropped either way.
    }
  }
}

/** A read-only connection of a thread that only reads (a reader thread, the cost thread): the events file, the derived file attached (read-only too). */
export function openReadOnly(path: string, busyTimeoutMs: number): Connection {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    attachDerived(db, path);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/** The durability settings in effect on a connection, as opened above. */
export interface ConnectionSettings {
  journalMode: string;
  /** 2 is FULL. */
  synchronous: number;
  busyTimeoutMs: number;
}

export function connectionSettings(db: Connection): ConnectionSettings {
  return {
    journalMode: db.pragma('journal_mode', { simple: true }) as string,
    synchronous: db.pragma('synchronous', { simple: true }) as number,
    busyTimeoutMs: db.pragma('busy_timeout', { simple: true }) as number,
  };
}

/** The error code of a SQLite error (e.g. SQLITE_FULL), if it is one. */
export function sqliteCode(err: unknown): string | undefined {
  return err instanceof Database.SqliteError ? err.code : undefined;
}

/**
 * A constraint violation is the caller's mistake (e.g. a duplicate key id) and keeps its error; any
 * other SQLite failure (disk full, I/O error, locked, read-only...) means the store cannot serve now.
 */
export function toStoreError(what: string, err: unknown): unknown {
  const code = sqliteCode(err);
  if (code === undefined || code.startsWith('SQLITE_CONSTRAINT')) return err;
  return new StoreUnavailableError(`SQLite ${what} failed: ${code}`, { cause: err });
}
