/**
 * A warning that a failing dependency repeats (every commit, every pooled connection, every catch-up
 * tick) logged at most once per interval: an outage must not flood the log it is diagnosed from.
 * The next line logged says how many were left out.
 */
export interface WarnLogger {
  warn(obj: object, msg: string): void;
}

export const WARNING_INTERVAL_MS = 10_000;

export function throttledWarn(logger: WarnLogger | undefined, intervalMs = WARNING_INTERVAL_MS): WarnLogger {
  let loggedAt = Number.NEGATIVE_INFINITY;
  let omitted = 0;
  return {
    warn(obj, msg) {
      const now = Date.now();
      if (now - loggedAt < intervalMs) {
        omitted++;
        return;
      }
      loggedAt = now;
      logger?.warn(omitted > 0 ? { ...obj, omitted } : obj, `${msg} (the same warning within ${intervalMs / 1000} s is not logged again)`);
      omitted = 0;
    },
  };
}
