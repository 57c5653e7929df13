/**
 * Group commit with backpressure. Requests submit small units; the committer merges the units that
 * arrive while the store's commits in flight are at their limit into one `store.commit()`, so one
 * COMMIT serves many requests (the SQLite writer thread also merges the units waiting for it). Each
 * caller's promise settles when its own unit is durable.
 *
 * Flush triggers: the first unit after an idle moment (on the next turn of the event loop, so
 * requests parsed in the same turn share it); a commit finishing while units wait; a group reaching
 * `maxGroupEvents`; close. Past `maxQueueEvents` waiting, `submit` refuses at once (503) instead of
 * letting memory grow.
 */
import { BmError } from '../errors.js';
import type { CommitUnit, EventOutcome } from '../store/types.js';
import { StoreUnavailableError } from '../store/types.js';

export interface CommitterOptions {
  /** `deadline`, epoch milliseconds: the store's cue not to begin a unit whose callers were answered 503. */
  commit: (unit: CommitUnit, deadline: number) => Promise<EventOutcome[]>;
  /** Most events merged into one commit. */
  maxGroupEvents: number;
  /** Most events waiting (queued and committing) before submit refuses. */
  maxQueueEvents: number;
  /** Commits handed to the store at once (runtime.ts says how many for each store, and why). */
  maxInFlight: number;
  /**
   * A unit not committed this long after its submission is answered 503: a hung store must hold no
   * request for ever, whether its unit still waits in the queue or is in a commit. A commit that timed
   * out still counts as in flight until it settles, and may yet succeed: stored, though never
   * acknowledged. Default 5,000 ms.
   */
  commitTimeoutMs?: number;
  onCommitError?: (error: unknown) => void;
}

interface Pending {
  /** Dropped once merged into a commit: nothing here should keep its events alive while the commit runs. */
  unit: CommitUnit | undefined;
  /** Its events, whose outcomes it gets. */
  events: number;
  size: number;
  /** performance.now() by which it must be answered. */
  deadline: number;
  resolve: (outcomes: EventOutcome[]) => void;
  reject: (error: unknown) => void;
}

/** Seconds a client should wait after a refusal. */
const RETRY_AFTER_SECONDS = 1;
const COMMIT_TIMEOUT_MS = 5000;

export class Committer {
  private queue: Pending[] = [];
  private queuedEvents = 0;
  private inFlight = 0;
  private inFlightEvents = 0;
  private scheduled = false;
  private closing = false;
  private idleWaiters: (() => void)[] = [];
  /** Armed while units wait in the queue: answers those whose deadline passes before a commit takes them. */
  private expiryTimer: NodeJS.Timeout | undefined;
  /** When the most recent commit failed (Date.now()); undefined once one succeeds. */
  private failedAt: number | undefined;

  constructor(private readonly options: CommitterOptions) {}

  /** Share of the queue in use, 0..1: the write load that recommendedBatchSize looks at. */
  get load(): number {
    return Math.min(1, (this.queuedEvents + this.inFlightEvents) / this.options.maxQueueEvents);
  }

  /** Events waiting now, queued and committing (the write-queue gauge). */
  get waitingEvents(): number {
    return this.queuedEvents + this.inFlightEvents;
  }

  /** Whether the most recent commit failed, less than `ms` ago (health reporting). */
  failedWithin(ms: number): boolean {
    return this.failedAt !== undefined && Date.now() - this.failedAt < ms;
  }

  /**
   * Throws the refusal that a write would get now (queue full, or closing), so that a request can be
   * refused before its body is read: parsing bodies only to refuse them spends the CPU commits need.
   */
  admit(): void {
    const refusal = this.refusal(1);
    if (refusal !== undefined) throw refusal;
  }

  submit(unit: CommitUnit): Promise<EventOutcome[]> {
    const size = Math.max(1, unit.events.length + unit.quarantine.length);
    const refusal = this.refusal(size);
    if (refusal !== undefined) return Promise.reject(refusal);
    const deadline = performance.now() + this.timeoutMs;
    return new Promise((resolve, reject) => {
      this.queue.push({ unit, events: unit.events.length, size, deadline, resolve, reject });
      this.queuedEvents += size;
      this.schedule();
      this.armExpiry();
    });
  }

  /** Stops taking units and resolves once everything submitted before has settled. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.queue.length === 0 && this.inFlight === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private refusal(size: number): BmError | undefined {
    if (this.closing) return new BmError('BM_ERR_SHUTTING_DOWN', undefined, { retryAfter: RETRY_AFTER_SECONDS });
    const waiting = this.queuedEvents + this.inFlightEvents;
    // An empty queue always takes the unit, so one batch larger than the queue bound still goes through.
    if (waiting > 0 && waiting + size > this.options.maxQueueEvents) {
      return new BmError('BM_ERR_OVERLOADED', `${waiting} events are waiting for commit; retry shortly.`, { retryAfter: RETRY_AFTER_SECONDS });
    }
    return undefined;
  }

  private get timeoutMs(): number {
    return this.options.commitTimeoutMs ?? COMMIT_TIMEOUT_MS;
  }

  private armExpiry(): void {
    if (this.expiryTimer !== undefined || this.queue.length === 0) return;
    this.expiryTimer = setTimeout(() => this.expire(), Math.max(0, this.queue[0]!.deadline - performance.now()));
  }

  /** Answers the queued units past their deadline (the oldest come first), then re-arms for the next. */
  private expire(): void {
    this.expiryTimer = undefined;
    const now = performance.now();
    const expired: Pending[] = [];
    while (this.queue.length > 0 && this.queue[0]!.deadline <= now) {
      const p = this.queue.shift()!;
      this.queuedEvents -= p.size;
      expired.push(p);
    }
    if (expired.length > 0) this.fail(expired, this.timeoutError());
    if (this.queue.length === 0 && this.inFlight === 0) this.wakeIdle();
    this.armExpiry();
  }

  private timeoutError(): StoreUnavailableError {
    return new StoreUnavailableError(`the store did not commit within ${this.timeoutMs} ms`);
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const group = this.takeGroup();
      void this.commitGroup(group);
    }
  }

  private takeGroup(): Pending[] {
    const group: Pending[] = [];
    let events = 0;
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      if (group.length > 0 && events + next.size > this.options.maxGroupEvents) break;
      group.push(this.queue.shift()!);
      events += next.size;
    }
    this.queuedEvents -= events;
    this.inFlightEvents += events;
    if (this.queue.length === 0 && this.expiryTimer !== undefined) {
      clearTimeout(this.expiryTimer);
      this.expiryTimer = undefined;
    }
    return group;
  }

  private async commitGroup(group: Pending[]): Promise<void> {
    this.inFlight++;
    const size = group.reduce((n, p) => n + p.size, 0);
    // The group's oldest unit comes first: its deadline is the group's.
    const timer = setTimeout(() => this.fail(group, this.timeoutError()), Math.max(0, group[0]!.deadline - performance.now()));
    try {
      const outcomes = await this.options.commit(merge(group), performance.timeOrigin + group[0]!.deadline);
      this.failedAt = undefined;
      let at = 0;
      for (const p of group) {
        const n = p.events;
        p.resolve(outcomes.slice(at, at + n));
        at += n;
      }
    } catch (error) {
      this.fail(group, error);
    } finally {
      clearTimeout(timer);
      this.inFlight--;
      this.inFlightEvents -= size;
      if (this.queue.length > 0) this.schedule();
      else if (this.inFlight === 0) this.wakeIdle();
    }
  }

  private wakeIdle(): void {
    for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /** Rejects the group's callers (those already answered by a timeout are not answered again). */
  private fail(group: Pending[], error: unknown): void {
    this.failedAt = Date.now();
    this.options.onCommitError?.(error);
    const reason =
      error instanceof StoreUnavailableError
        ? new BmError('BM_ERR_STORE_UNAVAILABLE', undefined, { retryAfter: RETRY_AFTER_SECONDS }, { cause: error })
        : error;
    for (const p of group) p.reject(reason);
  }
}

/** The group's units as one, taken out of the group. */
function merge(group: Pending[]): CommitUnit {
  const units = group.map((p) => p.unit!);
  for (const p of group) p.unit = undefined;
  if (units.length === 1) return units[0]!;
  const unit: CommitUnit = { events: [], quarantine: [] };
  for (const u of units) {
    for (const e of u.events) unit.events.push(e);
    for (const q of u.quarantine) unit.quarantine.push(q);
    if (u.replayed) {
      unit.replayed ??= { ids: [], at: u.replayed.at };
      unit.replayed.ids.push(...u.replayed.ids);
    }
  }
  return unit;
}
