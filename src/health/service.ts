/** Whether this node can take writes now: the store's own probe, and whether commits are failing. */
import { BmError } from '../errors.js';
import type { Health } from '../store/types.js';

export interface HealthOptions {
  store: Health;
  /** Whether commits are failing now, even if the store's small probe write still passes. */
  commitsFailing: () => boolean;
  timeoutMs?: number;
  /** Where a failed check's cause goes: the driver's message may name the host, user or file, and /healthz needs no key. */
  onFailure?: (cause: Error) => void;
}

/** Why a check failed, as /healthz says it: only what this service itself knows, never a driver's message. */
class CheckFailed extends Error {}

const HEALTH_TIMEOUT_MS = 2000;

export class HealthService {
  constructor(private readonly options: HealthOptions) {}

  /** Resolves with the backend's name when writable; throws BM_ERR_STORE_UNAVAILABLE otherwise. */
  async check(): Promise<{ status: 'ok'; store: Health['backend'] }> {
    const { store } = this.options;
    const timeoutMs = this.options.timeoutMs ?? HEALTH_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CheckFailed(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      // A full disk can leave room for the probe's one row but not for a commit's pages.
      if (this.options.commitsFailing()) throw new CheckFailed('the last commit failed');
      await Promise.race([store.checkWritable(), timeout]);
    } catch (cause) {
      this.options.onFailure?.(cause as Error);
      const reason = cause instanceof CheckFailed ? cause.message : 'its probe write failed (the cause is in the server log)';
      throw new BmError('BM_ERR_STORE_UNAVAILABLE', `The ${store.backend} store cannot take writes: ${reason}`, { retryAfter: 1 }, { cause });
    } finally {
      clearTimeout(timer);
    }
    return { status: 'ok', store: store.backend };
  }
}
