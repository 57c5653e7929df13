/**
 * The cost thread: owns a CostService (so its kept months) with reads of the store of its own and
 * its own heap, and answers the main thread's requests (protocol.ts) with the text to send: a page
 * as JSON or CSV (kept by the service beside its answer), or the FOCUS export in chunks, each sent
 * when the main thread pulls it (its socket took the one before).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { lowerThreadPriority } from '../background-thread.js';
import { loadPricing } from '../pricing/setup.js';
import { openThreadReads } from '../store/thread-reads.js';
import { asQueryTimeout } from '../query/timed.js';
import type { CaughtUpFor, ThreadReads } from '../store/types.js';
import { costFocus, inChunks } from './format.js';
import type { CostThreadData, FromCostThread, ToCostThread } from './protocol.js';
import { fromWire, toWire } from './protocol.js';
import { CostService } from './service.js';

// Pricing is background work beside ingestion, as reads are.
lowerThreadPriority();
const port = parentPort!;
const data = workerData as CostThreadData;
const send = (message: FromCostThread) => port.postMessage(message);

/** The catch-ups asked of the main thread, by id. */
const waiting = new Map<number, { resolve(): void; reject(err: unknown): void }>();
let nextId = 1;
const caughtUp = (what: CaughtUpFor) =>
  new Promise<void>((resolve, reject) => {
    const id = nextId++;
    waiting.set(id, { resolve, reject });
    send({ type: 'caughtUp', id, what });
  });

// Opened at the first message's turn, in order: messages wait on it.
const opened: Promise<{ reads: ThreadReads; service: CostService }> = openThreadReads(data.reads, caughtUp).then((reads) => ({
  reads,
  service: new CostService({ usage: reads.usage, storage: reads.storage, pricing: loadPricing(data.pricing), ...data.bounds }),
}));
// A failure to open is each request's error, answered when it comes; not an unhandled rejection that stops the thread.
opened.catch(() => {});
/** Set to 1 by the main thread (thread.ts) when the request's client left. */
const cancelledBy = (flag: Int32Array) => () => Atomics.load(flag, 0) === 1;
/** FOCUS exports being pulled, by request id. */
const exports = new Map<number, Iterator<string>>();

async function handle(message: ToCostThread): Promise<void> {
  switch (message.type) {
    case 'page': {
      const { service } = await opened;
      const { text, nextCursor } = await service.pageText(message.tenantId, message.request, cancelledBy(message.cancelled));
      send({ type: 'page', id: message.id, text, nextCursor });
      return;
    }
    case 'focus': {
      const { service } = await opened;
      const cancelled = cancelledBy(message.cancelled);
      const accounts = await service.fineRows(message.tenantId, message.request, cancelled);
      // Its client left after the last account was priced: nobody will pull it.
      if (cancelled()) return;
      exports.set(message.id, inChunks(costFocus(message.tenantName, accounts)));
      send({ type: 'ready', id: message.id });
      return;
    }
    case 'pull': {
      const lines = exports.get(message.id);
      if (lines === undefined) return;
      const next = lines.next();
      if (next.done === true) exports.delete(message.id);
      send({ type: 'chunk', id: message.id, chunk: next.done === true ? null : next.value });
      return;
    }
    case 'cancel':
      exports.delete(message.id);
      return;
    case 'caughtUp': {
      const wait = waiting.get(message.id);
      waiting.delete(message.id);
      if (message.error === undefined) wait?.resolve();
      else wait?.reject(fromWire(message.error));
      return;
    }
    case 'close':
      await opened.then(({ reads }) => reads.close(), () => undefined);
      port.close();
      return;
  }
}

port.on('message', (message: ToCostThread) => {
  handle(message).catch((err: unknown) => {
    // Coded here: a store's error class does not cross to the main thread.
    if ('id' in message) send({ type: 'error', id: message.id, error: toWire(asQueryTimeout(err)) });
  });
});
