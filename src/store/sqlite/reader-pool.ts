/**
 * The main thread's side of the reader threads: named reads (reads.ts) run there, each within a time
 * budget. Waiting reads are served one tenant at a time in turn, and one tenant's reads hold at most
 * all threads but one, so a tenant that sends many heavy reads waits behind its own reads, and
 * another tenant's read finds a thread free. A read still running well past its budget (one
 * step that never ends) has its thread stopped and replaced.
 *
 * A read whose caller left (its signal aborted) is dropped from its queue if it waits, and its
 * thread is replaced if it runs. better-sqlite3 has no sqlite3_interrupt, and Worker.terminate takes
 * effect only when a statement calls back into JavaScript, so the thread's stop flag is set too: a
 * usage statement reads it between its pieces (a day of rows each) and ends there; any other read
 * runs to its end on the old thread, which then exits, and the pool goes on with a new one. At most
 * as many such threads as the pool has: past that, the read's thread stays taken (and counted to its
 * tenant) until its statement ends, so that aborted reads cannot multiply threads.
 */
import { Worker } from 'node:worker_threads';
import { InvalidCursorError, ReadAbortedError, ReadTimeoutError, StoreUnavailableError, SumOutOfRangeError } from '../types.js';
import type { ReadCounts } from '../types.js';
import { epochNow } from './read-budget.js';
import type { ReadName, ReadRequest, ReadResponse, ReaderData, ReaderThreadData, Reads } from './reads.js';

/** How long past its deadline a read may run before its thread is stopped. */
export const STOP_GRACE_MS = 1000;

interface Job {
  request: ReadRequest;
  tenant: number;
  resolve(result: unknown): void;
  reject(err: unknown): void;
}

interface Thread {
  worker: Worker;
  /** The id of a read to stop, read by the thread's long statements between their pieces. */
  stop: Int32Array;
  job: Job | undefined;
  timer: NodeJS.Timeout | undefined;
}

export class ReaderPool {
  readonly #threads: Thread[] = [];
  /** Waiting jobs per tenant, and the tenants with waiting jobs in the order they are served. */
  readonly #waiting = new Map<number, Job[]>();
  readonly #turns: number[] = [];
  /** Reads running per tenant, each at most #perTenant. */
  readonly #running = new Map<number, number>();
  readonly #perTenant: number;
  #nextId = 1;
  #closed = false;
  /** Replaced threads still running an abandoned read's statement. */
  #abandonedThreads = 0;
  readonly #abandoned = { waiting: 0, running: 0 };

  constructor(
    private readonly data: ReaderData,
    size: number,
    private readonly workerUrl = new URL('./reader-worker.js', import.meta.url),
  ) {
    this.#perTenant = Math.max(1, size - 1);
    for (let i = 0; i < size; i++) this.#threads.push(this.#spawn());
  }

  /**
   * Runs the named read for `tenant` within `budgetMs` (waiting included). Rejects with
   * ReadTimeoutError past it, InvalidCursorError or RangeError for a bad query,
   * StoreUnavailableError when the database cannot be read or the pool is closed, and
   * ReadAbortedError when `signal` aborts first.
   */
  run<K extends ReadName>(name: K, args: Reads[K]['args'], tenant: number, budgetMs: number, signal?: AbortSignal): Promise<Reads[K]['result']> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closed'));
    if (signal?.aborted) {
      this.#abandoned.waiting++;
      return Promise.reject(aborted());
    }
    return new Promise((resolve, reject) => {
      const request: ReadRequest = { id: this.#nextId, name, args, deadline: epochNow() + budgetMs, budgetMs };
      // Ids stay within an Int32Array's range: the thread's stop flag holds one.
      this.#nextId = this.#nextId === 0x7fffffff ? 1 : this.#nextId + 1;
      const onAbort = () => this.#abort(job);
      // Settled, the job lets go of the caller's signal.
      const settle = () => signal?.removeEventListener('abort', onAbort);
      const job: Job = {
        request,
        tenant,
        resolve: (result) => {
          settle();
          resolve(result as Reads[K]['result']);
        },
        reject: (err) => {
          settle();
          reject(err);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const queue = this.#waiting.get(tenant);
      if (queue === undefined) {
        this.#waiting.set(tenant, [job]);
        this.#turns.push(tenant);
      } else {
        queue.push(job);
      }
      this.#dispatch();
    });
  }

  counts(): ReadCounts {
    let waiting = 0;
    for (const queue of this.#waiting.values()) waiting += queue.length;
    return { waiting, abandonedWaiting: this.#abandoned.waiting, abandonedRunning: this.#abandoned.running };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const queue of this.#waiting.values()) for (const job of queue) job.reject(new StoreUnavailableError('the store is closed'));
    this.#waiting.clear();
    this.#turns.length = 0;
    await Promise.all(this.#threads.map((thread) => this.#stop(thread, new StoreUnavailableError('the store is closed'))));
  }

  /** The caller of `job` left: out of its queue if it waits, its thread replaced if it runs. */
  #abort(job: Job): void {
    const queue = this.#waiting.get(job.tenant);
    const index = queue?.indexOf(job) ?? -1;
    if (queue !== undefined && index !== -1) {
      queue.splice(index, 1);
      if (queue.length === 0) {
        this.#waiting.delete(job.tenant);
        this.#turns.splice(this.#turns.indexOf(job.tenant), 1);
      }
      this.#abandoned.waiting++;
      job.reject(aborted());
      return;
    }
    const thread = this.#threads.find((t) => t.job === job);
    if (thread === undefined) return;
    this.#abandoned.running++;
    // A usage statement ends at its next piece; any other read runs to its end.
    Atomics.store(thread.stop, 0, job.request.id);
    if (this.#abandonedThreads >= this.#threads.length) {
      // The thread stays taken until its statement ends; its answer then finds the job settled.
      job.reject(aborted());
      return;
    }
    this.#abandonedThreads++;
    this.#replace(thread, aborted(), () => this.#abandonedThreads--);
  }

  #dispatch(): void {
    for (const thread of this.#threads) {
      if (thread.job !== undefined) continue;
      const job = this.#next();
      if (job === undefined) return;
      thread.job = job;
      this.#running.set(job.tenant, (this.#running.get(job.tenant) ?? 0) + 1);
      thread.worker.ref();
      thread.worker.postMessage(job.request);
      const wait = Math.max(0, job.request.deadline - epochNow()) + STOP_GRACE_MS;
      thread.timer = setTimeout(() => this.#replace(thread, timeout(job.request.budgetMs)), wait);
    }
  }

  /**
   * The next waiting job, the tenants taking turns (a tenant at its share of threads waits its
   * turn); jobs already past their deadline are refused.
   */
  #next(): Job | undefined {
    for (let i = 0; i < this.#turns.length; ) {
      const tenant = this.#turns[i]!;
      if ((this.#running.get(tenant) ?? 0) >= this.#perTenant) {
        i++;
        continue;
      }
      this.#turns.splice(i, 1);
      const queue = this.#waiting.get(tenant)!;
      const job = queue.shift()!;
      if (queue.length === 0) this.#waiting.delete(tenant);
      else this.#turns.push(tenant);
      if (job.request.deadline >= epochNow()) return job;
      job.reject(timeout(job.request.budgetMs));
      i = 0;
    }
    return undefined;
  }

  #spawn(): Thread {
    const stop = new SharedArrayBuffer(4);
    const workerData: ReaderThreadData = { ...this.data, stop };
    const thread: Thread = { worker: new Worker(this.workerUrl, { workerData }), stop: new Int32Array(stop), job: undefined, timer: undefined };
    thread.worker.unref();
    thread.worker.on('message', (response: ReadResponse) => {
      const job = thread.job;
      if (job === undefined || job.request.id !== response.id) return;
      this.#finish(thread);
      if (response.ok) job.resolve(response.result);
      else job.reject(rebuild(response.error));
      this.#dispatch();
    });
    thread.worker.on('error', () => {
      // The exit that follows replaces the thread and fails its read.
    });
    thread.worker.on('exit', () => {
      if (!this.#closed && this.#threads.includes(thread)) this.#replace(thread, new StoreUnavailableError('a SQLite reader thread exited'));
    });
    return thread;
  }

  #finish(thread: Thread): void {
    clearTimeout(thread.timer);
    thread.timer = undefined;
    const tenant = thread.job?.tenant;
    if (tenant !== undefined) {
      const running = this.#running.get(tenant)! - 1;
      if (running === 0) this.#running.delete(tenant);
      else this.#running.set(tenant, running);
    }
    thread.job = undefined;
    thread.worker.unref();
  }

  async #stop(thread: Thread, reason: unknown): Promise<void> {
    const job = thread.job;
    this.#finish(thread);
    job?.reject(reason);
    await thread.worker.terminate();
  }

  /**
   * Stops a thread (its read, if any, fails with `reason`) and starts another in its place;
   * `exited` runs once the old thread is gone.
   */
  #replace(thread: Thread, reason: unknown, exited?: () => void): void {
    const index = this.#threads.indexOf(thread);
    if (index === -1) return;
    this.#threads.splice(index, 1);
    void this.#stop(thread, reason).finally(exited);
    if (this.#closed) return;
    this.#threads.push(this.#spawn());
    this.#dispatch();
  }
}

const aborted = () => new ReadAbortedError('the read was abandoned: its caller left');
const timeout = (budgetMs: number) => new ReadTimeoutError(`the read took more than its budget of ${budgetMs} ms`);

function rebuild(error: Extract<ReadResponse, { ok: false }>['error']): Error {
  switch (error.kind) {
    case 'timeout':
      return new ReadTimeoutError(error.message);
    case 'aborted':
      return new ReadAbortedError(error.message);
    case 'cursor':
      return new InvalidCursorError(error.message);
    case 'range':
      return new RangeError(error.message);
    case 'sum':
      return new SumOutOfRangeError();
    case 'error':
      if (error.code !== undefined && !error.code.startsWith('SQLITE_CONSTRAINT')) {
        return new StoreUnavailableError(`SQLite read failed: ${error.code}`, { cause: new Error(error.message) });
      }
      return new Error(error.message);
  }
}
