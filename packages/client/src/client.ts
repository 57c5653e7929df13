/**
 * BucketmeterClient: queues events and ships them to bucketmeter's POST /storage/batch, in batches,
 * gzipped, exactly once (every event carries an eventId from the moment it is queued, so a batch
 * sent twice is stored once: the server answers the second copy as duplicates).
 */
import { EventQueue } from './sender/queue.js';
import type { Batch } from './sender/queue.js';
import type { BatchBody } from './sender/batch-body.js';
import { Transport } from './sender/transport.js';
import type { HttpReply } from './sender/transport.js';
import { isRetryable, retryDelayMs } from './sender/backoff.js';
import { installExitHooks } from './exit-hooks.js';
import { uuidv7 } from './uuidv7.js';
import type { FieldError, MeterError, MeterEvent, MeterStats } from './types.js';

export interface BucketmeterClientOptions {
  /** Base URL of bucketmeter, e.g. http://localhost:8080. */
  url: string;
  apiKey: string | undefined;
  /** Most events per batch; the server's recommended size is used when smaller. Default 1,000. */
  maxBatchSize?: number;
  /** Most bytes of JSON per batch (before gzip). Default 4 MiB. */
  maxBatchBytes?: number;
  /** Longest an event waits before its batch is sent. Default 1,000 ms. */
  maxDelayMs?: number;
  /** Events held in memory; past it new events are dropped and counted (see README). Default 100,000. */
  maxQueueSize?: number;
  /** Keep the queue on disk in this directory (one directory per process). */
  spoolDir?: string;
  /** Bound of the spool on disk; past it new events are dropped and counted. Default 1 GiB. */
  maxSpoolBytes?: number;
  /** Batches in flight at once. Default 4. */
  concurrency?: number;
  /** Longest wait between two tries of a batch. Default 30,000 ms. */
  maxRetryDelayMs?: number;
  /** One HTTP request's time limit. Default 30,000 ms. */
  requestTimeoutMs?: number;
  /** How often the server's recommended batch size is fetched again. Default 60,000 ms. */
  batchSizeRefreshMs?: number;
  /** Drain on beforeExit, SIGTERM and SIGINT. Default true. */
  exitHooks?: boolean;
  /** Longest drain at process exit. Default 10,000 ms. */
  exitTimeoutMs?: number;
  onError?: (error: MeterError) => void;
}

const DEFAULT_BATCH_SIZE = 500;
/** Reports of dropped events are coalesced: at most one per this interval. */
const DROP_REPORT_MS = 5000;

let isoMs = -1;
let iso = '';

/** toISOString costs as much as the rest of track(), and events come many to a millisecond: the last one is kept. */
function isoTime(ms: number): string {
  if (ms !== isoMs) {
    iso = new Date(ms).toISOString();
    isoMs = ms;
  }
  return iso;
}

export class BucketmeterClient {
  private readonly queue: EventQueue;
  private readonly transport: Transport | undefined;
  private readonly o: Required<Omit<BucketmeterClientOptions, 'spoolDir' | 'onError' | 'apiKey'>>;
  private readonly counts: Omit<MeterStats, 'queued'> = { sent: 0, duplicates: 0, retried: 0, rejected: 0, dropped: 0 };
  private batchSize: number;
  private inFlight = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly refreshTimer: NodeJS.Timeout | undefined;
  private readonly waiters = new Set<() => void>();
  private readonly sleepers = new Set<() => void>();
  /** Set by a 401/403: nothing more is sent; events stay queued. */
  private blocked: string | undefined;
  private closed = false;
  /** close() gave up waiting: sends stop, in-flight ones are cut. */
  private stopping = false;
  private unreported = 0;
  private dropReason = '';
  private toldTooLarge = false;
  private lastDropReport = 0;
  private readonly removeExitHooks: () => void;

  constructor(private readonly options: BucketmeterClientOptions) {
    this.o = {
      url: options.url,
      maxBatchSize: options.maxBatchSize ?? 1000,
      maxBatchBytes: options.maxBatchBytes ?? 4 * 1024 * 1024,
      maxDelayMs: options.maxDelayMs ?? 1000,
      maxQueueSize: options.maxQueueSize ?? 100_000,
      maxSpoolBytes: options.maxSpoolBytes ?? 1024 ** 3,
      concurrency: options.concurrency ?? 4,
      maxRetryDelayMs: options.maxRetryDelayMs ?? 30_000,
      requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
      batchSizeRefreshMs: options.batchSizeRefreshMs ?? 60_000,
      exitHooks: options.exitHooks ?? true,
      exitTimeoutMs: options.exitTimeoutMs ?? 10_000,
    };
    this.batchSize = Math.min(DEFAULT_BATCH_SIZE, this.o.maxBatchSize);
    this.queue = new EventQueue({ maxEvents: this.o.maxQueueSize, maxSpoolBytes: this.o.maxSpoolBytes }, options.spoolDir);
    if (options.apiKey === undefined || options.apiKey === '') {
      // A missing key must not break the application: said once here, events counted as dropped.
      this.blocked = 'no API key given: events are not sent';
      this.report({ kind: 'permanent', message: `bucketmeter: ${this.blocked}`, status: 0, events: 0 });
    } else {
      this.transport = new Transport(options.url, options.apiKey, this.o.requestTimeoutMs);
      void this.refreshBatchSize();
      this.refreshTimer = setInterval(() => void this.refreshBatchSize(), this.o.batchSizeRefreshMs).unref();
    }
    this.removeExitHooks = this.o.exitHooks ? installExitHooks(this, this.o.exitTimeoutMs) : () => {};
    // Batches a previous process left in the spool go out now.
    if (this.queue.sealedCount > 0) this.pump();
  }

  /**
   * Queues one event (same shape as the API) and returns its eventId; undefined when it was not
   * queued (closed, queue full, not serializable), which is counted and reported. Never throws.
   */
  track(event: MeterEvent): string | undefined {
    if (this.closed) return this.drop(1, 'the client is closed');
    if (this.transport === undefined) {
      // No key: said once at construction; holding events that can never be sent would only cost memory.
      this.counts.dropped++;
      return undefined;
    }
    let line: string;
    const now = Date.now();
    const eventId = event.eventId ?? uuidv7(now);
    try {
      // Stringify the caller's object as it is (V8's fast path; a Date becomes ISO by its toJSON),
      // then put the defaults in front: copying the object first would cost more than the rest.
      const json = JSON.stringify(event);
      const head = (event.timestamp === undefined ? `"timestamp":"${isoTime(now)}",` : '') + (event.eventId === undefined ? `"eventId":"${eventId}",` : '');
      line = head === '' ? json : json.length === 2 ? `{${head.slice(0, -1)}}` : `{${head}${json.slice(1)}`;
    } catch (error) {
      this.report({ kind: 'rejected', message: `bucketmeter: event cannot be serialized: ${String(error)}`, events: [{ event, errors: [] }] });
      this.counts.rejected++;
      return undefined;
    }
    // The body would be `[`, the open lines with their commas (openBytes), this line and its `]`, in
    // UTF-8 bytes. A UTF-16 unit is at most 3 of them: the line is measured only when near the bound.
    const open = this.queue.openBytes;
    if (open + line.length * 3 + 2 > this.o.maxBatchBytes && open + Buffer.byteLength(line) + 2 > this.o.maxBatchBytes) this.seal();
    if (!this.queue.append(line)) return this.drop(1, 'the queue is full');
    if (this.queue.openCount >= this.batchSize) this.seal();
    else this.flushTimer ??= setTimeout(() => this.seal(), this.o.maxDelayMs).unref();
    return eventId;
  }

  /** Sends everything queued so far and resolves once the server has answered for all of it. */
  async flush(): Promise<void> {
    this.seal();
    if (this.isIdle()) return;
    // The caller awaits: keep the process alive while the batches go out.
    const keepAlive = setInterval(() => {}, 1 << 30);
    try {
      await new Promise<void>((done) => this.waiters.add(done));
    } finally {
      clearInterval(keepAlive);
    }
  }

  /**
   * Stops taking events and drains what is queued, for at most timeoutMs. What is still unsent
   * after that is counted as dropped (in memory) or left in the spool for the next process.
   */
  async close(options: { timeoutMs?: number } = {}): Promise<MeterStats> {
    if (!this.closed) {
      this.closed = true;
      this.removeExitHooks();
      clearInterval(this.refreshTimer);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<void>((done) => (timer = setTimeout(done, options.timeoutMs ?? 10_000)));
      await Promise.race([this.flush(), timedOut]);
      clearTimeout(timer);
      this.stopping = true;
      this.transport?.destroy();
      for (const wake of this.sleepers) wake();
      // Sends in flight fail (their sockets are gone) and give their batches back; then count what is left.
      while (this.inFlight > 0) await new Promise<void>((done) => setImmediate(done));
      this.queue.closeSpool();
      this.flushDropReport(true);
      if (this.options.spoolDir === undefined && this.queue.pending > 0) {
        const left = this.queue.pending;
        this.counts.dropped += left;
        this.report({ kind: 'dropped', message: `bucketmeter: ${left} events still unsent when close() ended`, events: left });
      }
    }
    return this.stats();
  }

  stats(): MeterStats {
    const inMemoryLeft = this.closed && this.options.spoolDir === undefined;
    return { queued: inMemoryLeft ? 0 : this.queue.pending, ...this.counts };
  }

  private seal(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.queue.seal();
    this.pump();
  }

  private pump(): void {
    while (this.blocked === undefined && !this.stopping && this.inFlight < this.o.concurrency) {
      const batch = this.queue.take();
      if (batch === undefined) break;
      this.inFlight++;
      void this.deliver(batch).finally(() => {
        this.inFlight--;
        this.pump();
        this.wakeWaiters();
      });
    }
    this.wakeWaiters();
  }

  private isIdle(): boolean {
    return this.inFlight === 0 && (this.queue.pending === 0 || this.blocked !== undefined);
  }

  private wakeWaiters(): void {
    if (!this.isIdle()) return;
    for (const done of this.waiters) done();
    this.waiters.clear();
  }

  /** Sends one batch until the server has answered for every event in it, or sending must stop. */
  private async deliver(batch: Batch): Promise<void> {
    try {
      const finished = await this.sendLines(batch.body!);
      if (finished) this.queue.done(batch);
      else this.queue.putBack(batch);
    } catch (error) {
      // A bug here must never become an unhandled rejection in the host process; the batch waits and is tried again.
      this.report({ kind: 'instrumentation', message: `bucketmeter: sender failed: ${String(error)}`, cause: error });
      await this.sleep(this.o.maxRetryDelayMs);
      this.queue.putBack(batch);
    }
  }

  /** True once every line is answered for (stored, duplicate or rejected); false when sending stopped. */
  private async sendLines(lines: BatchBody): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      if (this.blocked !== undefined || this.stopping) return false;
      let reply: HttpReply | undefined;
      let failure: string;
      try {
        reply = await this.transport!.postBatch(lines.json);
        failure = `HTTP ${reply.status}`;
      } catch (error) {
        failure = (error as Error).message;
      }
      if (reply?.status === 200) {
        this.settle(lines, reply.body);
        return true;
      }
      if (reply?.status === 413) return this.tooLarge(lines);
      if (reply !== undefined && (reply.status === 401 || reply.status === 403)) {
        // Batches in flight together all get it: say it once.
        if (this.blocked !== undefined) return false;
        this.blocked = `the server refused the API key (HTTP ${reply.status}): sending stopped, events stay queued`;
        this.report({ kind: 'permanent', message: `bucketmeter: ${this.blocked}`, status: reply.status, events: this.queue.pending });
        return false;
      }
      if (reply !== undefined && !isRetryable(reply.status)) {
        this.counts.rejected += lines.count;
        this.report({ kind: 'permanent', message: `bucketmeter: batch refused with HTTP ${reply.status}: ${reply.body.slice(0, 500)}`, status: reply.status, events: lines.count });
        return true;
      }
      if (this.stopping) return false;
      const delayMs = retryDelayMs(attempt, this.o.maxRetryDelayMs, reply?.retryAfter);
      this.counts.retried += lines.count;
      this.report({ kind: 'retrying', message: `bucketmeter: batch of ${lines.count} not delivered (${failure}); retrying in ${Math.round(delayMs)} ms`, attempt: attempt + 1, delayMs });
      await this.sleep(delayMs);
    }
  }

  /** 413: the batch is too big for this server. Halve it, and the bounds for later batches too. */
  private async tooLarge(lines: BatchBody): Promise<boolean> {
    if (lines.count === 1) {
      this.counts.rejected++;
      this.report({ kind: 'permanent', message: 'bucketmeter: one event is larger than the server accepts (HTTP 413); dropped', status: 413, events: 1 });
      return true;
    }
    const half = Math.ceil(lines.count / 2);
    if (this.o.maxBatchSize > half) {
      if (!this.toldTooLarge) {
        this.report({ kind: 'permanent', message: `bucketmeter: batch of ${lines.count} too large for the server (HTTP 413): split, and later batches made smaller`, status: 413, events: 0 });
        this.toldTooLarge = true;
      }
      this.o.maxBatchSize = half;
      this.batchSize = Math.min(this.batchSize, half);
    }
    return (await this.sendLines(lines.slice(0, half))) && (await this.sendLines(lines.slice(half, lines.count)));
  }

  /** Counts the batch reply; rejected events go to onError with the event and the server's field errors. */
  private settle(lines: BatchBody, body: string): void {
    let reply: { accepted?: number; duplicates?: number; rejected?: { index: number; errors: FieldError[] }[]; rejectedCount?: number };
    try {
      reply = JSON.parse(body) as typeof reply;
    } catch {
      reply = { accepted: lines.count };
    }
    const rejected = reply.rejected ?? [];
    // The server details the first rejections only (--batch-reply-max-rejected) and counts them all.
    const rejectedCount = reply.rejectedCount ?? rejected.length;
    this.counts.sent += lines.count - rejectedCount;
    this.counts.duplicates += reply.duplicates ?? 0;
    if (rejectedCount === 0) return;
    this.counts.rejected += rejectedCount;
    const events = rejected.map((r) => ({ event: JSON.parse(lines.line(r.index) ?? 'null') as MeterEvent, errors: r.errors }));
    const detailed = rejectedCount > rejected.length ? `; the first ${rejected.length} detailed` : '';
    this.report({ kind: 'rejected', message: `bucketmeter: ${rejectedCount} events rejected by the server (not retried)${detailed}`, events });
  }

  private async refreshBatchSize(): Promise<void> {
    try {
      const size = await this.transport!.recommendedBatchSize();
      if (size !== undefined) this.batchSize = Math.min(size, this.o.maxBatchSize);
    } catch {
      // Unreachable now: the sender's own retries will say so; keep the current size.
    }
  }

  /** Waits, unless close() gives up first; the timer never keeps the process alive by itself. */
  private sleep(ms: number): Promise<void> {
    return new Promise((done) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        done();
      };
      const timer = setTimeout(wake, ms).unref();
      this.sleepers.add(wake);
    });
  }

  private drop(count: number, why: string): undefined {
    this.counts.dropped += count;
    this.unreported += count;
    this.dropReason = why;
    this.flushDropReport(false);
    return undefined;
  }

  private flushDropReport(force: boolean): void {
    const now = Date.now();
    if (this.unreported === 0 || (!force && now - this.lastDropReport < DROP_REPORT_MS)) return;
    this.report({ kind: 'dropped', message: `bucketmeter: ${this.unreported} events dropped (${this.dropReason})`, events: this.unreported });
    this.unreported = 0;
    this.lastDropReport = now;
  }

  /** Hands an error to onError (used by instrumentS3 for events it could not make). */
  reportError(error: MeterError): void {
    this.report(error);
  }

  private report(error: MeterError): void {
    if (this.options.onError === undefined) return;
    try {
      this.options.onError(error);
    } catch {
      // The user's callback failing must not break the sender.
    }
  }
}
