/**
 * A warning that a failing dependency repeats (every commit, every pooled connection, every catch-up
 * tick) logged at most once per interval: an outage must not flood the log it is diagnosed from.
 * Those left out are counted in one more line at the interval's end, so the count is known even when
 * the outage ends with the interval.
 */
export interface WarnLogger {
  warn(obj: object, msg: string): void;
}

export const WARNING_INTERVAL_MS = 10_000;

export function throttledWarn(logger: WarnLogger | undefined, intervalMs = WARNING_INTERVAL_MS): WarnLogger {
  let loggedAt = Number.NEGATIVE_INFINITY;
  let omitted = 0;
  let last: { obj: object; msg: string } | undefined;
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (omitted === 0 || last === undefined) return;
    logger?.warn({ ...last.obj, omitted }, `${last.msg} (${omitted} more within ${intervalMs / 1000} s, not logged; this is the last of them)`);
    omitted = 0;
  };
  return {
    warn(obj, msg) {
      const now = Date.now();
      if (now - loggedAt < intervalMs) {
        omitted++;
        last = { obj, msg };
        // A timer, not the next warning, reports them: an outage may end within the interval.
        if (!scheduled) {
          scheduled = true;
          setTimeout(flush, loggedAt + intervalMs - now).unref();
        }
        return;
      }
      loggedAt = now;
      logger?.warn(obj, `${msg} (the same warning within ${intervalMs / 1000} s is not logged again)`);
    },
  };
}
