/**
 * The HTTP driver: decodes requests into calls on the runtime's services and maps their results and
 * errors to replies. Holds no business rules of its own.
 */
import Fastify, { LogController } from 'fastify';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import type { Authenticator, Tenant } from '../auth/authenticator.js';
import type { RateLimiter } from '../auth/rate-limit.js';
import { BmError } from '../errors.js';
import type { IngestService } from '../ingest/service.js';
import type { Store } from '../store/types.js';
import { InvalidCursorError } from '../store/types.js';
import { readBody } from './body.js';
import type { BodyLimits } from './body.js';
import { toProblem } from './problem.js';
import { eventsRoutes } from './routes/events.js';
import { ingestRoutes } from './routes/ingest.js';
import { statusRoutes } from './routes/status.js';

declare module 'fastify' {
  interface FastifyRequest {
    tenant: Tenant;
  }
  interface FastifyContextConfig {
    /** false: the route answers without an API key. */
    auth?: boolean;
  }
}

export interface HttpDeps {
  logger: Logger;
  store: Store;
  ingest: IngestService;
  authenticator: Authenticator;
  rateLimiter?: RateLimiter;
  recommendedBatchSize: () => number;
  limits: BodyLimits;
  requestTimeoutMs: number;
  tls?: { cert: Buffer; key: Buffer };
}

export async function buildHttpServer(deps: HttpDeps): Promise<FastifyInstance> {
  const options: FastifyServerOptions & { https?: { cert: Buffer; key: Buffer } } = {
    loggerInstance: deps.logger,
    // One log line per request costs more than the request at our rates; errors are logged below.
    logController: new LogController({ disableRequestLogging: true }),
    requestTimeout: deps.requestTimeoutMs,
    connectionTimeout: deps.requestTimeoutMs * 2,
    keepAliveTimeout: 65_000,
    maxRequestsPerSocket: 0,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    ...(deps.tls ? { https: deps.tls } : {}),
  };
  const app = Fastify(options) as unknown as FastifyInstance;

  app.decorateRequest('tenant', null as unknown as Tenant);

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (request, payload, done) => {
    readBody(payload, request.headers, deps.limits).then(
      (body) => done(null, body),
      (error: Error) => done(error, undefined),
    );
  });

  app.addHook('onRequest', async (request, reply) => {
    // Unknown routes answer 404 whatever the key; /healthz needs none.
    if (request.routeOptions.url === undefined || request.routeOptions.config.auth === false) return;
    request.tenant = await deps.authenticator.authenticate(request.headers['x-api-key']);
    deps.rateLimiter?.take(request.tenant.keyId);
    void reply;
  });

  app.setNotFoundHandler((request, reply) => {
    const problem = toProblem(new BmError('BM_ERR_NOT_FOUND', `No route ${request.method} ${request.url.split('?', 1)[0]}.`), request.url.split('?', 1)[0]);
    void reply.code(problem.status).headers(problem.headers).send(problem.body);
  });

  app.setErrorHandler((error, request, reply) => {
    const mapped = error instanceof InvalidCursorError ? new BmError('BM_ERR_QUERY_INVALID', 'cursor was not made by this server', { errors: [{ path: '/cursor', message: 'cursor is not valid', expected: 'a nextCursor from a previous page', received: 'another string' }] }) : error;
    const problem = toProblem(mapped, request.url.split('?', 1)[0]);
    if (problem.status >= 500) {
      const level = problem.body.code === 'BM_ERR_INTERNAL' ? 'error' : 'warn';
      request.log[level]({ err: error, code: problem.body.code, method: request.method, url: request.routeOptions.url }, 'request failed');
    } else {
      request.log.debug({ code: problem.body.code, method: request.method, url: request.routeOptions.url }, 'request refused');
    }
    // A body we stopped reading must not be drained: close the connection after the reply.
    if (problem.status === 413 || problem.status === 408) reply.header('connection', 'close');
    void reply.code(problem.status).headers(problem.headers).send(problem.body);
  });

  await app.register(statusRoutes({ store: deps.store, recommendedBatchSize: deps.recommendedBatchSize }));
  await app.register(ingestRoutes(deps.ingest));
  await app.register(eventsRoutes(deps.store));
  return app;
}
