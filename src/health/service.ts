/** Whether this node can take writes now: the store's own probe, and whether commits are failing. */
import { BmError } from '../errors.js';
import type { Health } from '../store/types.js';

export interface HealthOptions {
  store: Health;
  /** Whether commits are failing now, even if the store's small probe write still passes. */
  commitsFailing: () => boolean;
  timeoutMs?: number;
}

const HEALTH_TIMEOUT_MS = 2000;

export class HealthService {
  constructor(private readonly options: HealthOptions) {}

  /** Resolves with the backend's name when writable; throws BM_ERR_STORE_UNAVAILABLE otherwise. */
  async check(): Promise<{ status: 'ok'; store: Health['backend'] }> {
    const { store } = this.options;
    const timeoutMs = this.options.timeoutMs ?? HEALTH_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      // A full disk can leave room for the probe's one row but not for a commit's pages.
      if (this.options.commitsFailing()) throw new Error('the last commit failed');
      await Promise.race([store.checkWritable(), timeout]);
    } catch (cause) {
      throw new BmError('BM_ERR_STORE_UNAVAILABLE', `The ${store.backend} store cannot take writes: ${(cause as Error).message}`, { retryAfter: 1 }, { cause });
    } finally {
      clearTimeout(timer);
    }
    return { status: 'ok', store: store.backend };
  }
}
