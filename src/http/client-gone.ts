/** The signal a route hands its service so that the reads of a request whose client left are not run. */
import type { FastifyReply } from 'fastify';

/**
 * Aborts when the connection closes before the reply is sent (the browser reloaded, navigated away,
 * or gave up): no one will read the answer, so the reads behind it need not run (README, "Reads
 * whose client left").
 */
export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}
