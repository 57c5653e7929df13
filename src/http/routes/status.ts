/** Liveness and key check (/ping), store health (/healthz), and the recommended batch size. */
import type { FastifyInstance } from 'fastify';
import { BmError } from '../../errors.js';
import type { Store } from '../../store/types.js';

export interface StatusDeps {
  store: Store;
  /** The batch size to recommend now. */
  recommendedBatchSize: () => number;
  /** Whether commits are failing now, even if the store's small probe write still passes. */
  commitsFailing: () => boolean;
}

const HEALTH_TIMEOUT_MS = 2000;

export function statusRoutes(deps: StatusDeps) {
  return async function (app: FastifyInstance): Promise<void> {
    app.get('/ping', async (_request, reply) => reply.type('application/json; charset=utf-8').send('"PONG"'));

    for (const url of ['/storage/recommendedBatchSize', '/s3/recommendedBatchSize']) {
      // A bare integer: valid JSON, and what existing clients parse.
      app.get(url, async (_request, reply) => reply.type('application/json; charset=utf-8').send(String(deps.recommendedBatchSize())));
    }

    app.get('/healthz', { config: { auth: false } }, async () => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${HEALTH_TIMEOUT_MS} ms`)), HEALTH_TIMEOUT_MS);
      });
      try {
        // A full disk can leave room for the probe's one row but not for a commit's pages.
        if (deps.commitsFailing()) throw new Error('the last commit failed');
        await Promise.race([deps.store.checkWritable(), timeout]);
      } catch (cause) {
        throw new BmError('BM_ERR_STORE_UNAVAILABLE', `The ${deps.store.backend} store cannot take writes: ${(cause as Error).message}`, { retryAfter: 1 }, { cause });
      } finally {
        clearTimeout(timer);
      }
      return { status: 'ok', store: deps.store.backend };
    });
  };
}
