/**
 * The named reads a reader thread runs (reader-worker.ts), with what each takes and returns. A read
 * that can take more than a few milliseconds (event pages now; usage, object and cost queries next)
 * is added here and to the worker's table, and is called through ReaderPool.run with a budget.
 */
import type {
  DataVersion, EventPage, EventQuery, InventoryEntryRecord, InventoryLag, ObjectsStoreQuery, StorageDeltaRow, StorageInterval, StorageIntervalFilter, StorageKey,
  StorageStoreQuery, StorageWindowSums, UsageColumns, UsageDayCheck, UsageStoreQuery,
} from '../types.js';

export interface Reads {
  'events.page': { args: { tenantId: number; query: EventQuery }; result: EventPage };
  /** One SQL statement each, stopped between its pieces (a day of rows) past its budget or once its caller left. Columns are transferred, not copied. */
  'usage.query': { args: { tenantId: number; query: UsageStoreQuery }; result: UsageColumns };
  'usage.version': { args: { tenantId: number; toDay: number }; result: DataVersion };
  'usage.reconcile': { args: { tenantId: number; fromDay: number; toDay: number }; result: UsageDayCheck[] };
  'inventory.lag': { args: Record<string, never>; result: InventoryLag };
  'inventory.storage': { args: { tenantId: number; query: StorageStoreQuery }; result: StorageWindowSums[] };
  'inventory.objects': { args: { tenantId: number; query: ObjectsStoreQuery }; result: InventoryEntryRecord[] };
  'inventory.deltas': { args: { tenantId: number; from: number; to: number }; result: { opening: { key: StorageKey; bytes: bigint }[]; deltas: StorageDeltaRow[] } };
  'inventory.intervals': { args: { tenantId: number; from: number; to: number; filter: StorageIntervalFilter }; result: StorageInterval[] };
}

export type ReadName = keyof Reads;

export interface ReaderData {
  path: string;
  busyTimeoutMs: number;
}

/** A reader thread's data: the pool's, and its own stop flag (an Int32Array's buffer: the id of a read to stop). */
export interface ReaderThreadData extends ReaderData {
  stop: SharedArrayBuffer;
}

export interface ReadRequest {
  id: number;
  name: ReadName;
  args: unknown;
  /** Epoch milliseconds: the read stops at its next step after this. */
  deadline: number;
  budgetMs: number;
}

/** How a failed read is rebuilt on the main thread: the error classes do not cross threads. */
export type ReadErrorKind = 'timeout' | 'aborted' | 'cursor' | 'range' | 'sum' | 'error';

export type ReadResponse =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { kind: ReadErrorKind; message: string; code: string | undefined } };
