/** How long to wait before sending a failed batch again. */

export const BASE_DELAY_MS = 100;

/**
 * Full jitter (random between 0 and the capped exponential), so clients that failed together do
 * not come back together; but never sooner than the server's Retry-After.
 */
export function retryDelayMs(attempt: number, maxDelayMs: number, retryAfter: string | undefined, now = Date.now()): number {
  const exponential = Math.min(maxDelayMs, BASE_DELAY_MS * 2 ** Math.min(attempt, 30));
  const jittered = Math.random() * exponential;
  const asked = retryAfterMs(retryAfter, now);
  return asked === undefined ? jittered : Math.max(jittered, Math.min(asked, maxDelayMs));
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 10.2.3); undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Statuses worth sending the same batch again for: the server may take it later. */
export function isRetryable(status: number): boolean {
  return status === 408 || status === 429 || status === 500 || status === 502 || status === 503 || status === 504;
}
