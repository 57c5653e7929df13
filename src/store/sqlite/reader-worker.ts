/**
 * A reader thread: runs named reads (reads.ts) on its own read-only connection, one at a time, so
 * that a long read never holds the main event loop. Each read checks its budget between bounded
 * steps and stops with ReadTimeoutError past it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { lowerThreadPriority } from '../../background-thread.js';
import { InvalidCursorError, ReadAbortedError, ReadTimeoutError, SumOutOfRangeError } from '../types.js';
import { openReadOnly, sqliteCode } from './connection.js';
import type { Connection } from './connection.js';
import { ReadBudget } from './read-budget.js';
import { EventReader } from './read-events.js';
import { UsageReader } from './usage.js';
import { columnBuffers } from '../usage-columns.js';
import type { UsageColumns } from '../types.js';
import { InventoryReader } from './inventory.js';
import type { ReadErrorKind, ReadName, ReadRequest, ReadResponse, ReaderThreadData, Reads } from './reads.js';

type Handlers = { [K in ReadName]: (args: Reads[K]['args'], budget: ReadBudget) => Reads[K]['result'] };

function handlers(db: Connection, check: () => void): Handlers {
  const events = new EventReader(db);
  const usage = new UsageReader(db, check);
  const inventory = new InventoryReader(db);
  return {
    'events.page': ({ tenantId, query }, budget) => events.list(tenantId, query, budget),
    'usage.query': ({ tenantId, query }) => usage.query(tenantId, query),
    'usage.version': ({ tenantId, toDay }) => usage.version(tenantId, toDay),
    'usage.reconcile': ({ tenantId, fromDay, toDay }) => usage.reconcile(tenantId, fromDay, toDay),
    'inventory.lag': () => inventory.lag(),
    'inventory.storage': ({ tenantId, query }) => inventory.storage(tenantId, query),
    'inventory.objects': ({ tenantId, query }) => inventory.objects(tenantId, query),
    'inventory.deltas': ({ tenantId, from, to }) => inventory.storageDeltas(tenantId, from, to),
    'inventory.intervals': ({ tenantId, from, to, filter }) => inventory.storageIntervals(tenantId, from, to, filter),
  };
}

function kindOf(err: unknown): ReadErrorKind {
  if (err instanceof ReadTimeoutError) return 'timeout';
  if (err instanceof ReadAbortedError) return 'aborted';
  if (err instanceof InvalidCursorError) return 'cursor';
  if (err instanceof RangeError) return 'range';
  if (err instanceof SumOutOfRangeError) return 'sum';
  return 'error';
}

// Reads are background work beside ingestion.
lowerThreadPriority();
const port = parentPort!;
const data = workerData as ReaderThreadData;
/** The id of a read whose caller left, set by the main thread (ReaderPool) while the read runs. */
const stop = new Int32Array(data.stop);
let current: { id: number; budget: ReadBudget } | undefined;
// Called from inside long statements (UsageReader): they end at their next step, not their last row.
const check = () => {
  if (current === undefined) return;
  if (Atomics.load(stop, 0) === current.id) throw new ReadAbortedError('the read was abandoned: its caller left');
  current.budget.check();
};
let table: Handlers | undefined;

port.on('message', (request: ReadRequest) => {
  let response: ReadResponse;
  let transfer: ArrayBuffer[] = [];
  try {
    table ??= handlers(openReadOnly(data.path, data.busyTimeoutMs), check);
    const run = table[request.name] as (args: unknown, budget: ReadBudget) => unknown;
    current = { id: request.id, budget: new ReadBudget(request.deadline, request.budgetMs) };
    const result = run(request.args, current.budget);
    if (request.name === 'usage.query') transfer = columnBuffers(result as UsageColumns);
    response = { id: request.id, ok: true, result };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    response = { id: request.id, ok: false, error: { kind: kindOf(err), message, code: sqliteCode(err) } };
  } finally {
    current = undefined;
  }
  port.postMessage(response, transfer);
});
