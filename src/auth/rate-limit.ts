/**
 * Per-key request rate limit (token bucket), off unless configured. Counted per process: with N nodes
 * behind a load balancer a key gets up to N times the rate, which keeps the check free of a database
 * round trip.
 */
import { BmError } from '../errors.js';

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perSecond: number, private readonly maxKeys = 100_000) {}

  /** Takes one request's token for `keyId`, or throws a 429 BmError with Retry-After. */
  take(keyId: string, now = Date.now()): void {
    let bucket = this.buckets.get(keyId);
    if (bucket === undefined) {
      if (this.buckets.size >= this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
      bucket = { tokens: this.perSecond, at: now };
      this.buckets.set(keyId, bucket);
    }
    bucket.tokens = Math.min(this.perSecond, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    if (bucket.tokens < 1) {
      const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / this.perSecond));
      throw new BmError('BM_ERR_RATE_LIMITED', `More than ${this.perSecond} requests per second with this key.`, { retryAfter });
    }
    bucket.tokens -= 1;
  }
}
