/**
 * SQLite reads of a thread of their own (the cost thread): a read-only connection, each read caught
 * up first by the thread that owns the store (its derived thread folds), then run here, synchronously:
 * this thread's event loop is the one it holds.
 */
import type { CaughtUpFor, ThreadReads } from '../types.js';
import { openReadOnly, toStoreError } from './connection.js';
import { InventoryReader } from './inventory.js';
import { UsageReader } from './usage.js';

export function openSqliteThreadReads(spec: { path: string; busyTimeoutMs: number }, caughtUp: (what: CaughtUpFor) => Promise<void>): ThreadReads {
  const db = openReadOnly(spec.path, spec.busyTimeoutMs);
  const usage = new UsageReader(db);
  const inventory = new InventoryReader(db);
  const read = async <T>(what: CaughtUpFor, run: () => T): Promise<T> => {
    await caughtUp(what);
    try {
      return run();
    } catch (err) {
      throw toStoreError(`${what} read`, err);
    }
  };
  return {
    usage: {
      query: (tenantId, query) => read('usage', () => usage.query(tenantId, query)),
      version: (tenantId, toDay) => read('usage', () => usage.version(tenantId, toDay)),
    },
    storage: {
      storageDeltas: (tenantId, from, to) => read('inventory', () => inventory.storageDeltas(tenantId, from, to)),
      storageIntervals: (tenantId, from, to, filter) => read('inventory', () => inventory.storageIntervals(tenantId, from, to, filter)),
    },
    close: async () => {
      db.close();
    },
  };
}
