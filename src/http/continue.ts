/**
 * `Expect: 100-continue`: the client holds its body until told to send it. Node says so as soon as
 * the headers arrive; here it is said only once the request has passed every check that does not
 * need the body (the key, the rate limit, the write queue), so a refused client never sends it.
 * A request refused before 100 Continue has its connection closed by Node after the reply.
 */
import type { FastifyInstance } from 'fastify';

export function continueAfterChecks(app: FastifyInstance): void {
  app.server.on('checkContinue', (req, res) => app.server.emit('request', req, res));
  // preParsing: after every onRequest hook (the checks), before the body is read.
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (request.headers.expect !== undefined && request.raw.httpVersion === '1.1' && !reply.raw.headersSent) reply.raw.writeContinue();
    done(null, payload);
  });
}
