/** The main thread's side of the writer thread (or the derived thread): sends requests, matches answers, survives its death. */
import { Worker } from 'node:worker_threads';
import { StoreUnavailableError } from '../types.js';
import type { DerivedData, WriterCommand, WriterData, WriterResponse, WriterResult } from './protocol.js';

interface Pending {
  resolve(result: WriterResult): void;
  reject(err: unknown): void;
}

/** One worker and the requests sent to it: when it dies, exactly these fail. */
interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
  error: unknown;
}

export interface WriterLogger {
  warn(obj: object, msg: string): void;
}

/** The failure a writer answered with, as the `cause` of the StoreUnavailableError. */
export class SqliteWriteError extends Error {
  override readonly name = 'SqliteWriteError';
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** `C`: the commands the thread takes (the writer's, or the derived thread's). */
export class WriterThread<C extends { type: string } = WriterCommand> {
  #thread: Thread | undefined;
  #nextId = 1;
  #closed = false;
  /** Called when an answer says the writer's usage sums are due for a fold (set by the store). */
  onFoldSums: (() => void) | undefined;

  constructor(
    private readonly data: WriterData | DerivedData,
    private readonly logger: WriterLogger | undefined,
    /** Tests substitute a thread that dies on purpose. */
    private readonly workerUrl = new URL('./writer-worker.js', import.meta.url),
  ) {}

  /** Rejects with StoreUnavailableError when the writer fails, has died, or the store is closed. */
  request(command: C, transfer: ArrayBuffer[] = []): Promise<WriterResult> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closed'));
    let thread: Thread;
    try {
      thread = this.#thread ?? this.#spawn();
    } catch (cause) {
      return Promise.reject(new StoreUnavailableError('cannot start the SQLite writer thread', { cause }));
    }
    return this.#send(thread, command, transfer);
  }

  /** Lets the requests already sent finish, then stops the thread (which closes its connection). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const thread = this.#thread;
    if (thread === undefined) return;
    // Held until the thread is gone: an unreferenced worker would let the process end mid-close.
    thread.worker.ref();
    try {
      await this.#send(thread, { type: 'close' }, []);
    } catch {
      // It died: its connection is gone with it.
    }
    await thread.worker.terminate();
  }

  #send(thread: Thread, command: C | { type: 'close' }, transfer: ArrayBuffer[]): Promise<WriterResult> {
    const id = this.#nextId++;
    return new Promise<WriterResult>((resolve, reject) => {
      thread.pending.set(id, { resolve, reject });
      // Keeps the process alive only while an answer is awaited.
      if (thread.pending.size === 1) thread.worker.ref();
      const request = { ...command, id };
      thread.worker.postMessage(request, transfer);
    });
  }

  #spawn(): Thread {
    // What the writer allocates lives for one transaction at most. Without a bound its young generation
    // grew to 16 MB semi-spaces under batch load (42 MB committed, measured); 16 MB in all keeps it
    // at about 25 MB with scavenges still under a millisecond.
    const worker = new Worker(this.workerUrl, { workerData: this.data, resourceLimits: { maxYoungGenerationSizeMb: 16 } });
    worker.unref();
    const thread: Thread = { worker, pending: new Map(), error: undefined };
    worker.on('message', (response: WriterResponse) => {
      const pending = thread.pending.get(response.id);
      if (pending === undefined) return;
      thread.pending.delete(response.id);
      if (thread.pending.size === 0 && !this.#closed) worker.unref();
      if (response.ok) {
        if (response.foldSums === true) this.onFoldSums?.();
        pending.resolve(response.result);
      } else {
        const cause = new SqliteWriteError(response.error.message, response.error.code);
        const code = response.error.code ?? response.error.message;
        pending.reject(new StoreUnavailableError(`SQLite write failed: ${code}`, { cause }));
      }
    });
    worker.on('error', (err) => {
      thread.error = err;
    });
    worker.on('exit', (exitCode) => {
      if (this.#thread === thread) this.#thread = undefined;
      if (this.#closed && thread.pending.size === 0) return;
      const cause = thread.error ?? new Error(`writer thread exited with code ${exitCode}`);
      this.logger?.warn({ err: cause, pending: thread.pending.size }, 'SQLite writer thread exited; the next write starts a new one');
      for (const pending of thread.pending.values()) {
        pending.reject(new StoreUnavailableError('the SQLite writer thread exited', { cause }));
      }
      thread.pending.clear();
    });
    this.#thread = thread;
    return thread;
  }
}
