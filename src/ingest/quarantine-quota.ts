/**
 * How much one tenant may put in quarantine per UTC day. Invalid input costs the server a row, a
 * reply entry and disk for a month; without a bound one small gzip body makes ten thousand of them.
 * Counted per process, seeded from the store once per tenant and day (so a restart does not reset
 * it); with several nodes a tenant can reach the limit once on each.
 */
import { BmError } from '../errors.js';

export interface QuarantineQuotaOptions {
  /** Entries per tenant per UTC day; 0 = no limit. */
  perDay: number;
  /** How many entries the tenant added since `since` (Unix seconds), as the store knows it. */
  countSince(tenantId: number, since: number): Promise<number>;
}

const DAY = 86_400;

export class QuarantineQuota {
  readonly #used = new Map<number, { day: number; used: number }>();
  readonly #loading = new Map<number, Promise<void>>();

  constructor(private readonly options: QuarantineQuotaOptions) {}

  /** Undefined when `take` can decide now; otherwise a promise to await first (the day's first use). */
  ready(tenantId: number, now: number): Promise<void> | undefined {
    if (this.options.perDay === 0) return undefined;
    const day = Math.floor(now / DAY);
    if (this.#used.get(tenantId)?.day === day) return undefined;
    let loading = this.#loading.get(tenantId);
    if (loading === undefined) {
      loading = this.options
        .countSince(tenantId, day * DAY)
        .then((used) => {
          if (this.#used.get(tenantId)?.day !== day) this.#used.set(tenantId, { day, used });
        })
        .finally(() => this.#loading.delete(tenantId));
      this.#loading.set(tenantId, loading);
    }
    return loading;
  }

  /** Counts `entries` against today's quota, or throws the 429 (nothing counted) when they do not fit. Call after `ready`. */
  take(tenantId: number, entries: number, now: number): void {
    const { perDay } = this.options;
    if (perDay === 0 || entries === 0) return;
    const day = Math.floor(now / DAY);
    const state = this.#used.get(tenantId);
    // A day that turned between ready() and now starts from zero: the new day holds nothing yet.
    const used = state?.day === day ? state.used : 0;
    if (used + entries > perDay) {
      const detail = `This tenant put ${used} inputs in quarantine today (UTC); the limit is ${perDay} a day, and this request would add ${entries}. Nothing of it was stored.`;
      throw new BmError('BM_ERR_QUARANTINE_QUOTA', detail, { retryAfter: (day + 1) * DAY - now, limit: perDay, used });
    }
    this.#used.set(tenantId, { day, used: used + entries });
  }
}
