/**
 * How often the job owner's background call catches the object inventory up (both stores). A catch-up
 * replays the events since each touched key's earliest pending one, so while this process is
 * committing the next one waits ten times as long as the last took (at least a second): it takes at
 * most about a tenth of the thread that runs it, and ingest keeps the rest. When commits pause it runs
 * at every call, so a backlog left by a burst is applied at full speed instead of at a tenth of it
 * (a read applies whatever is pending itself, within its budget, either way).
 */

/** At least how long between two background catch-ups while this process commits. */
export const BUSY_CATCH_UP_MS = 1000;
/** How many times its own duration the next background catch-up waits while this process commits. */
export const BUSY_FACTOR = 10;
/** No commit of this process for this long: ingest has paused (this pace's and PostgreSQL's background fold's). */
export const IDLE_MS = 50;

export class BackgroundPace {
  /** When the next background catch-up may run while committing (performance.now()). */
  #due = Number.NEGATIVE_INFINITY;

  constructor(
    /** When this process last committed events (performance.now()). */
    private readonly committedAt: () => number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Runs `catchUp` unless this process is committing and the last one's wait is not over. */
  async run(catchUp: () => Promise<void>): Promise<void> {
    const started = this.now();
    if (started - this.committedAt() < IDLE_MS && started < this.#due) return;
    try {
      await catchUp();
    } finally {
      this.#due = this.now() + Math.max(BUSY_CATCH_UP_MS, BUSY_FACTOR * (this.now() - started));
    }
  }
}
