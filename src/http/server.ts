/**
 * The HTTP driver: decodes requests into calls on the runtime's services and maps their results and
 * errors to replies. Holds no business rules of its own.
 */
import { STATUS_CODES } from 'node:http';
import type { ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { LogController } from 'fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import type { Authenticator, Tenant } from '../auth/authenticator.js';
import { RateLimiter } from '../auth/rate-limit.js';
import { scopeAllows, scopeNeeded } from '../auth/scope.js';
import { BmError } from '../errors.js';
import type { ErrorCode } from '../errors.js';
import type { HealthService } from '../health/service.js';
import type { IngestService } from '../ingest/service.js';
import type { EventQueryService } from '../query/events.js';
import { registerAccessLog } from './access-log.js';
import type { TelemetryService } from '../telemetry/service.js';
import { readBody } from './body.js';
import { continueAfterChecks } from './continue.js';
import type { BodyLimits } from './body.js';
import { countReplies, metricsRoute } from './metrics.js';
import type { HttpMetrics } from './metrics.js';
import { openApiRoutes, registerOpenApi } from './openapi.js';
import { toProblem } from './problem.js';
import { eventsRoutes } from './routes/events.js';
import { ingestRoutes } from './routes/ingest.js';
import { quarantineRoutes } from './routes/quarantine.js';
import { uiRoutes } from './ui.js';
import { statusRoutes } from './routes/status.js';
import { TELEMETRY_REQUESTS_PER_SECOND, telemetryRoutes } from './routes/telemetry.js';
import { costRoutes } from './routes/costs.js';
import { usageRoutes } from './routes/usage.js';
import { objectsRoutes } from './routes/objects.js';
import type { ObjectsService } from '../inventory/objects.js';
import type { UsageService } from '../usage/service.js';
import type { CostThread } from '../costs/thread.js';
import type { QuarantineService } from '../quarantine/service.js';

declare module 'fastify' {
  interface FastifyRequest {
    tenant: Tenant;
  }
  interface FastifyContextConfig {
    /** false: the route answers without an API key. */
    auth?: boolean;
    /**
     * A route that keeps every body it refuses sets this, for the refusals Fastify makes before the
     * handler runs (a Content-Type it cannot parse, a query string the schema refuses): it keeps the
     * body and throws the refusal, or returns undefined for an error it does not keep.
     */
    keepRefusedBody?: (request: FastifyRequest, error: unknown) => Promise<never> | undefined;
    /** The body's schema for the OpenAPI document only: bodies are read raw and checked by the services. */
    requestBody?: unknown;
  }
}

export interface HttpDeps {
  logger: Logger;
  ingest: IngestService;
  telemetry: TelemetryService;
  events: EventQueryService;
  health: HealthService;
  usage: UsageService;
  objects: ObjectsService;
  costs: CostThread;
  quarantine: QuarantineService;
  authenticator: Authenticator;
  rateLimiter?: RateLimiter;
  recommendedBatchSize: () => number;
  limits: BodyLimits;
  requestTimeoutMs: number;
  tls?: { cert: Buffer; key: Buffer };
  /** One log line per request (access-log.ts). */
  accessLog: boolean;
  metrics?: HttpMetrics;
}

/** The Expect value Node itself handles (its own test). */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/** How long a connection may send nothing before the server closes it: twice --request-timeout-ms. */
export const idleTimeoutMs = (requestTimeoutMs: number): number => requestTimeoutMs * 2;

export async function buildHttpServer(deps: HttpDeps): Promise<FastifyInstance> {
  const server: ServerOptions = {
    // Node's defaults let headers take 60 s and look at both timeouts only every 30 s.
    headersTimeout: deps.requestTimeoutMs,
    // Node checks headersTimeout against its own requestTimeout (300 s) when the server is made, before
    // Fastify sets ours: a --request-timeout-ms above 300 s would not start without it here too.
    requestTimeout: deps.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, Math.ceil(deps.requestTimeoutMs / 4)),
    // Node would answer a request without Host with an empty 400; the onRequest hook answers it.
    requireHostHeader: false,
  };
  const options: FastifyServerOptions & { http?: ServerOptions; https?: ServerOptions & { cert: Buffer; key: Buffer } } = {
    loggerInstance: deps.logger,
    // One log line per request costs more than the request at our rates; errors are logged below.
    logController: new LogController({ disableRequestLogging: true }),
    requestTimeout: deps.requestTimeoutMs,
    connectionTimeout: idleTimeoutMs(deps.requestTimeoutMs),
    keepAliveTimeout: 65_000,
    maxRequestsPerSocket: 0,
    // Answered by the onRequest hook instead: Fastify's own is a bare JSON 503 without a code or Retry-After.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    ...(deps.tls ? { https: { ...server, ...deps.tls } } : { http: server }),
    // Requests Node or the router refuse before any route runs get problem+json too.
    clientErrorHandler(error, socket) {
      answerClientError(deps.logger, error, socket);
    },
    frameworkErrors: (error, request, reply) => sendProblem(error, request, reply),
    // Query strings are checked, not trimmed: a parameter no route names is refused (problem.ts
    // names it), never silently dropped. verbose: the refusal can say what came.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: true, verbose: true } },
  };
  const app = Fastify(options) as unknown as FastifyInstance;
  // Node answers an unknown Expect with an empty 417; the onRequest hook answers it.
  app.server.on('checkExpectation', (req, res) => app.server.emit('request', req, res));
  continueAfterChecks(app);
  // Node closes a CONNECT request's socket without a word when nothing listens for it.
  app.server.on('connect', (_req, socket: Socket) => answerOnSocket(socket, new BmError('BM_ERR_NOT_FOUND', 'CONNECT is not supported.')));

  app.decorateRequest('tenant', null as unknown as Tenant);
  if (deps.accessLog) registerAccessLog(app);

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (request, payload, done) => {
    readBody(payload, request.headers, deps.limits).then(
      (body) => done(null, body),
      (error: Error) => done(error, undefined),
    );
  });

  let stopping = false;
  app.addHook('preClose', async () => {
    stopping = true;
  });
  app.addHook('onRequest', async (request, reply) => {
    // A request that reaches the node while it stops (behind another on a connection kept alive).
    if (stopping) {
      reply.header('connection', 'close');
      throw new BmError('BM_ERR_SHUTTING_DOWN', 'This node is stopping; ask again (another node, or this one after its restart).', { retryAfter: STOPPING_RETRY_AFTER_SECONDS });
    }
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) throw new BmError('BM_ERR_BAD_REQUEST', 'An HTTP/1.1 request needs a Host header.');
    // A bare "GET /" line parses as HTTP/0.9, which no client of this API sends (and which has no headers).
    if (request.raw.httpVersionMajor === 0) throw new BmError('BM_ERR_BAD_REQUEST', 'HTTP/0.9 is not supported; send HTTP/1.1.');
    const expect = request.headers.expect;
    if (expect !== undefined && !CONTINUE.test(expect)) throw new BmError('BM_ERR_EXPECTATION_FAILED');
    // Unknown routes answer 404 whatever the key; /healthz needs none.
    if (request.routeOptions.url === undefined || request.routeOptions.config.auth === false) return;
    request.tenant = await deps.authenticator.authenticate(request.headers['x-api-key']);
    const needs = scopeNeeded(request.routeOptions.url);
    if (!scopeAllows(request.tenant.scope, needs)) {
      throw new BmError('BM_ERR_AUTH_SCOPE', `This key's scope is ${request.tenant.scope}; ${request.method} ${request.routeOptions.url} needs a ${needs} or all key.`);
    }
    deps.rateLimiter?.take(request.tenant.keyId);
  });

  app.setNotFoundHandler((request, reply) => {
    const problem = toProblem(new BmError('BM_ERR_NOT_FOUND', `No route ${request.method} ${request.url.split('?', 1)[0]}.`), request.url.split('?', 1)[0]);
    void reply.code(problem.status).headers(problem.headers).send(problem.body);
  });

  // The one error handler: every route's errors reach the reply through toProblem.
  app.setErrorHandler(async (error, request, reply) => {
    const kept = request.routeOptions.config.keepRefusedBody?.(request, error);
    sendProblem(kept === undefined ? error : await kept.catch((refusal: unknown) => refusal), request, reply);
  });

  if (deps.metrics !== undefined) countReplies(app, deps.metrics.requests);
  await registerOpenApi(app);
  await app.register(statusRoutes({ health: deps.health, recommendedBatchSize: deps.recommendedBatchSize }));
  await app.register(ingestRoutes(deps.ingest, deps.limits));
  await app.register(eventsRoutes(deps.events));
  await app.register(telemetryRoutes(deps.telemetry, new RateLimiter(TELEMETRY_REQUESTS_PER_SECOND, 10_000)));
  await app.register(usageRoutes(deps.usage));
  await app.register(objectsRoutes(deps.objects));
  await app.register(costRoutes(deps.costs));
  await app.register(quarantineRoutes(deps.quarantine));
  if (deps.metrics?.scrape !== undefined) await app.register(metricsRoute(deps.metrics.scrape));
  await app.register(openApiRoutes());
  await app.register(uiRoutes());
  return app;
}

function sendProblem(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const problem = toProblem(error, request.url.split('?', 1)[0]);
  if (problem.body.code === 'BM_ERR_INTERNAL') {
    request.log.error({ err: error, code: problem.body.code, method: request.method, url: request.routeOptions.url }, 'request failed');
  } else {
    // Refusals, 503s included, come by the thousand under overload or an outage: a line with a stack
    // each would spend the CPU the server lacks. Store failures are logged where commits fail.
    request.log.debug({ code: problem.body.code, method: request.method, url: request.routeOptions.url, tenant: request.tenant?.name ?? null }, 'request refused');
  }
  if (problem.status === 408) reply.header('connection', 'close');
  else if (problem.status === 413 && !request.raw.complete) discardRestOfBody(request, reply);
  void reply.code(problem.status).headers(problem.headers).send(problem.body);
}

/** When a request refused while the node stops may ask again: another node answers at once, a restart in seconds. */
const STOPPING_RETRY_AFTER_SECONDS = 1;

/** How long a refused body may keep arriving after its reply before the connection is cut. */
const LINGER_MS = 5000;

/**
 * Reads and drops the rest of a body refused before its end (RFC 9112 §9.6). Closing at once instead
 * would make the kernel reset the connection while the client is still sending, and a reset can
 * destroy the reply before the client reads it: the client would see a dropped connection, not a 413.
 * A client still sending LINGER_MS after the reply is cut off.
 */
function discardRestOfBody(request: FastifyRequest, reply: FastifyReply): void {
  const body = request.raw;
  body.resume();
  reply.raw.once('finish', () => {
    if (body.complete) return;
    const cut = setTimeout(() => body.socket.destroy(), LINGER_MS);
    body.once('end', () => clearTimeout(cut)).once('close', () => clearTimeout(cut));
  });
}

/** Node's parser refused the request, or it took too long: answer on the socket itself, then close it. */
function answerClientError(logger: Logger, error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const code: ErrorCode = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'BM_ERR_REQUEST_TIMEOUT' : error.code === 'HPE_HEADER_OVERFLOW' ? 'BM_ERR_HEADERS_TOO_LARGE' : 'BM_ERR_BAD_REQUEST';
  // Not the error itself: its rawPacket is the request as received, API key included.
  logger.debug({ code, cause: error.code }, 'request refused by the HTTP parser');
  // A reply already started (a slow handler, not a slow client) cannot be replaced.
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
  if (inFlight?.headersSent === true) socket.destroy();
  else answerOnSocket(socket, new BmError(code));
}

/** Writes a problem+json reply straight to a socket that no request owns, then closes it. */
function answerOnSocket(socket: Socket, error: BmError): void {
  if (socket.writable) {
    const problem = toProblem(error);
    const body = JSON.stringify(problem.body);
    const head = Object.entries(problem.headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
    socket.write(`HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\n${head}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  }
  socket.destroy();
}
