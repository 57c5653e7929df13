/**
 * The main thread's side of the cost thread (worker.ts). Pricing a cold month is seconds of CPU and
 * of garbage collection (20 s of it, 30% GC, for 300k events over 30 days, docs/BENCHMARKS.md): on
 * the main thread it held every ingest and usage request that long. A thread of its own rather than
 * yielding every few milliseconds: yielding would still spend that CPU on the event loop's thread
 * (each request waiting behind slices of it), and kept months and the pricing garbage would still
 * live in the main heap, whose pauses every request pays. Here the main thread only passes the
 * parsed request and the reply's text, and runs the catch-up a SQLite read waits for.
 */
import { Readable } from 'node:stream';
import { totalmem } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { BmError } from '../errors.js';
import { ReadAbortedError } from '../store/types.js';
import type { ThreadReadsSource } from '../store/types.js';
import type { UsageRequest } from '../usage/params.js';
import type { Config } from '../config.js';
import { asQueryTimeout } from '../query/timed.js';
import type { CostThreadData, FromCostThread, ToCostThread } from './protocol.js';
import { fromWire, toWire } from './protocol.js';
import { costBounds } from './service.js';
import type { CostText } from './service.js';

/** A cancel flag the cost thread can read while it prices (protocol.ts). */
const flag = () => new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
/** When to ask again for costs still being priced. */
const NOT_READY_RETRY_AFTER_SECONDS = 10;
/** When to ask again after the thread ran out of heap (the next request starts another): as for costs not ready. */
const OUT_OF_MEMORY_RETRY_AFTER_SECONDS = 10;
const notReady = (ms: number) =>
  new BmError(
    'BM_ERR_COST_NOT_READY',
    `The costs asked for were not priced within ${(ms / 1000).toLocaleString('en')} s: a month's first pricing after it changed can take minutes on a large store. The pricing goes on; ask again after Retry-After.`,
    { retryAfter: NOT_READY_RETRY_AFTER_SECONDS },
  );
const abandoned = () => asQueryTimeout(new ReadAbortedError('the cost request was abandoned: its caller left'));

/** How long a closing thread may take to close its reads before it is stopped. */
const CLOSE_GRACE_MS = 5000;

interface Job {
  resolve(message: FromCostThread): void;
  reject(err: unknown): void;
}

/**
 * The memory this process may use, in bytes: the machine's, or a container's limit (cgroup) where it
 * is lower. totalmem() is the host's inside a container, where a heap sized by it would get the
 * whole server killed by the kernel instead of the cost thread failing alone.
 */
export function memoryLimit(): number {
  return Math.min(totalmem(), process.constrainedMemory?.() || Number.POSITIVE_INFINITY);
}

/**
 * The cost thread's memory, in MB: as set, else half of the memory this process may use, never less
 * than this process's own heap limit. Its V8 heap and its bounds are derived from it (costBounds).
 */
export function costHeap(setting: number, memoryBytes = memoryLimit()): number {
  if (setting > 0) return setting;
  const own = getHeapStatistics().heap_size_limit / 2 ** 20;
  return Math.max(Math.floor(own), Math.floor(memoryBytes / 2 / 2 ** 20));
}

export class CostThread {
  /**
   * Started by the first request, not with the server: an isolate of its own costs resident memory
   * that a node only ingesting never uses. undefined again after the thread exited: the next
   * request starts another (not at once, so a thread that cannot start does not loop).
   */
  #worker: Worker | undefined;
  /** Requests waiting for their answer (a page, or an export's first 'ready'). */
  readonly #jobs = new Map<number, Job>();
  /** FOCUS exports being sent: each pulls its next chunk when its reader wants more. */
  readonly #exports = new Map<number, Readable>();
  #nextId = 1;
  #closed = false;

  constructor(
    private readonly source: ThreadReadsSource,
    /** `answerWithinMs`: how long a request waits for its answer before BM_ERR_COST_NOT_READY (default: for good). */
    private readonly pricing: Pick<Config, 'prices' | 'bucketPlans'> & { costHeapMb?: number; answerWithinMs?: number },
    private readonly workerUrl = new URL('./worker.js', import.meta.url),
  ) {}

  /**
   * A /v1/costs page as text, or the request's coded error (as CostService throws them). `signal`:
   * the client left; answered at once with BM_ERR_CLIENT_CLOSED, and the pricing stops at its next step.
   */
  async page(tenantId: number, request: UsageRequest, signal?: AbortSignal): Promise<CostText> {
    const answer = await this.#ask({ type: 'page', id: this.#nextId++, tenantId, request, cancelled: flag() }, signal);
    if (answer.type !== 'page') throw new Error(`cost thread answered ${answer.type} to a page`);
    return { text: answer.text, nextCursor: answer.nextCursor };
  }

  /** The FOCUS CSV, priced before this resolves (a refusal is an error reply, not a cut stream), then read as it is written. */
  async focus(tenantId: number, tenantName: string, request: UsageRequest, signal?: AbortSignal): Promise<Readable> {
    const id = this.#nextId++;
    await this.#ask({ type: 'focus', id, tenantId, tenantName, request, cancelled: flag() }, signal);
    const stream = new Readable({
      read: () => this.#post({ type: 'pull', id }),
      destroy: (err, done) => {
        if (this.#exports.delete(id)) this.#post({ type: 'cancel', id });
        this.#refIfBusy();
        done(err);
      },
    });
    this.#exports.set(id, stream);
    this.#refIfBusy();
    return stream;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#failAll(new Error('the cost thread is closing'));
    const worker = this.#worker;
    if (worker === undefined) return;
    const exited = new Promise((done) => worker.once('exit', done));
    worker.postMessage({ type: 'close' } satisfies ToCostThread);
    const stop = setTimeout(() => void worker.terminate(), CLOSE_GRACE_MS);
    await exited;
    clearTimeout(stop);
  }

  #ask(message: Extract<ToCostThread, { type: 'page' | 'focus' }>, signal: AbortSignal | undefined): Promise<FromCostThread> {
    if (this.#closed) return Promise.reject(new Error('the cost thread is closed'));
    if (signal?.aborted) return Promise.reject(abandoned());
    return new Promise((resolve, reject) => {
      /** The request leaves: its own steps stop (a month it began pricing goes on while it can be kept: CostService). */
      const leave = (reason: unknown) => {
        Atomics.store(message.cancelled, 0, 1);
        // Its answer, if the thread still sends one, finds no job.
        if (this.#jobs.delete(message.id)) {
          settle();
          reject(reason);
        }
        this.#refIfBusy();
      };
      const onAbort = () => leave(abandoned());
      const within = this.pricing.answerWithinMs;
      // A first pricing of a large month takes minutes: a request is answered 503 rather than held
      // until a proxy or the server's idle timeout cuts it, and asked again it finds the month kept.
      const timer = within === undefined ? undefined : setTimeout(() => leave(notReady(within)), within);
      timer?.unref();
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#jobs.set(message.id, {
        resolve: (answer) => {
          settle();
          resolve(answer);
        },
        reject: (err) => {
          settle();
          reject(err);
        },
      });
      this.#post(message);
      this.#refIfBusy();
    });
  }

  #post(message: ToCostThread): void {
    this.#worker ??= this.#spawn();
    this.#worker.postMessage(message);
  }

  /** The thread keeps the process alive only while it has work: an idle one must not hold a stop. */
  #refIfBusy(): void {
    if (this.#jobs.size + this.#exports.size > 0) this.#worker?.ref();
    else this.#worker?.unref();
  }

  #spawn(): Worker {
    const { prices, bucketPlans, costHeapMb = 0 } = this.pricing;
    const memoryMb = costHeap(costHeapMb);
    const { heapMb, ...bounds } = costBounds(memoryMb);
    const workerData: CostThreadData = { reads: this.source.spec, pricing: { prices, bucketPlans }, bounds };
    const worker = new Worker(this.workerUrl, { workerData, resourceLimits: { maxOldGenerationSizeMb: heapMb } });
    worker.unref();
    worker.on('message', (message: FromCostThread) => this.#receive(worker, message));
    let failure: unknown;
    worker.on('error', (err) => {
      // The exit that follows fails what was asked.
      failure = err;
    });
    worker.on('exit', () => {
      if (this.#closed || worker !== this.#worker) return;
      this.#worker = undefined;
      // Out of its heap is what a large request can cause (not a bug), but also what requests beside it
      // and the months kept meet with it: a coded 503 to ask again (a new thread, nothing kept), not the
      // bound's refusal (422, the same each time).
      const outOfHeap = (failure as { code?: unknown } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.#failAll(
        outOfHeap
          ? new BmError(
              'BM_ERR_COST_OUT_OF_MEMORY',
              `The cost thread ran out of its ${memoryMb.toLocaleString('en')} MB heap (--cost-heap-mb) pricing or keeping months; the costs it was answering were stopped. Ask again after Retry-After; if this comes again, ask for fewer months or a provider filter, or give it more heap.`,
              { retryAfter: OUT_OF_MEMORY_RETRY_AFTER_SECONDS },
            )
          : new Error('the cost thread exited'),
      );
    });
    return worker;
  }

  #receive(worker: Worker, message: FromCostThread): void {
    if (message.type === 'caughtUp') {
      // The store's catch-up (SQLite), its backlog refusal coded as the store's own reads code it;
      // answered to the thread that asked, whichever runs by then.
      const caughtUp = this.source.caughtUp ?? (async () => undefined);
      caughtUp(message.what).then(
        () => worker.postMessage({ type: 'caughtUp', id: message.id } satisfies ToCostThread),
        (err: unknown) => worker.postMessage({ type: 'caughtUp', id: message.id, error: toWire(asQueryTimeout(err)) } satisfies ToCostThread),
      );
      return;
    }
    const stream = this.#exports.get(message.id);
    if (stream !== undefined) {
      if (message.type === 'chunk') {
        if (message.chunk === null) this.#exports.delete(message.id);
        stream.push(message.chunk);
      } else if (message.type === 'error') {
        this.#exports.delete(message.id);
        stream.destroy(fromWire(message.error));
      }
      this.#refIfBusy();
      return;
    }
    const job = this.#jobs.get(message.id);
    if (job === undefined) {
      // An export priced for a client that left meanwhile: the thread would keep it for good.
      if (message.type === 'ready') worker.postMessage({ type: 'cancel', id: message.id } satisfies ToCostThread);
      return;
    }
    this.#jobs.delete(message.id);
    if (message.type === 'error') job.reject(fromWire(message.error));
    else job.resolve(message);
    this.#refIfBusy();
  }

  #failAll(reason: Error): void {
    const jobs = [...this.#jobs.values()];
    const streams = [...this.#exports.values()];
    // Out of the maps first: a stream destroyed here has no thread to tell.
    this.#jobs.clear();
    this.#exports.clear();
    for (const job of jobs) job.reject(reason);
    for (const stream of streams) stream.destroy(reason);
  }
}
