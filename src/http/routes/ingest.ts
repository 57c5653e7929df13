/** POST single-event and batch ingestion, under the spec's paths and the wire format's /s3 aliases. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BATCH_RESULT, SINGLE_RESULT } from '../../ingest/results.js';
import type { IngestService } from '../../ingest/service.js';
import { notJsonProblem, readBody } from '../body.js';
import type { BodyLimits, RawBody } from '../body.js';
import { schemaRefusal } from '../problem.js';
import { NO_QUERY, routeSchema } from '../schemas.js';

const EMPTY = Buffer.alloc(0);

/** What the bodies should hold, for the OpenAPI document only: the body is read raw and checked by the ingest service. */
const EVENT_BODY = { $ref: '#/components/schemas/Event' };
const BATCH_BODY = { type: 'array', items: EVENT_BODY };
const SINGLE_DOC = { summary: 'Store one event', description: 'Committed before the reply; an invalid event is answered 400 and kept in quarantine.' };
const BATCH_DOC = {
  summary: 'Store a batch of events',
  description: 'A JSON array, optionally gzip or deflate encoded. Answered 200 whenever the body is an array within the limits: invalid events are counted in `rejectedCount` (the first ones detailed in `rejected`) and kept in quarantine.',
};

const SINGLE_PATHS = ['/storage', '/storage/singleCopy', '/s3', '/s3/single'];
const BATCH_PATHS = ['/storage/batch', '/s3/batch'];

export function ingestRoutes(ingest: IngestService, limits: BodyLimits) {
  return async (app: FastifyInstance): Promise<void> => {
    // After the key check (a root hook), before the body is read. A callback hook: no promise per request.
    app.addHook('onRequest', (_request, _reply, done) => {
      ingest.admit();
      done();
    });
    /** Keeps a body the reader refused in quarantine, then throws its error. */
    const refuseBody = (problem: NonNullable<RawBody['problem']>, bytes: Buffer, tenantId: number, source: string): Promise<never> =>
      ingest.rejectBody(tenantId, source, problem.code, problem.errors, bytes, problem.limit === undefined ? {} : { limit: problem.limit });
    /** The body as the reader left it; none at all reads as empty. */
    const rawBody = (request: FastifyRequest): RawBody => (request.body as RawBody | undefined) ?? { bytes: EMPTY };
    /** Refusals made before the handler runs keep the body too, like every other refused input. */
    const keepRefusedBody = (request: FastifyRequest, error: unknown): Promise<never> | undefined => {
      const source = `POST ${request.routeOptions.url}`;
      // A Content-Type Fastify could not parse: the body is unread; refused like any other that is not JSON.
      if ((error as { code?: string }).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
        return readBody(request.raw, request.headers, limits).then((raw) =>
          refuseBody(raw.problem ?? notJsonProblem(request.headers['content-type']), raw.bytes, request.tenant.id, source),
        );
      }
      // A query string the route does not take: the body was read already.
      const refusal = schemaRefusal(error);
      if (refusal === undefined) return undefined;
      return ingest.rejectBody(request.tenant.id, source, refusal.code, refusal.extra.errors ?? [], rawBody(request).bytes);
    };

    const routes = [
      ...SINGLE_PATHS.map((url) => ({ url, reply: SINGLE_RESULT, body: EVENT_BODY, doc: SINGLE_DOC, run: (tenantId: number, body: Buffer, source: string) => ingest.ingestOne(tenantId, body, source) })),
      ...BATCH_PATHS.map((url) => ({ url, reply: BATCH_RESULT, body: BATCH_BODY, doc: BATCH_DOC, run: (tenantId: number, body: Buffer, source: string) => ingest.ingestBatch(tenantId, body, source) })),
    ];
    for (const { url, reply, body, doc, run } of routes) {
      const source = `POST ${url}`;
      app.post(url, { config: { keepRefusedBody, requestBody: body }, schema: routeSchema(NO_QUERY, reply, doc) }, async (request) => {
        const raw = rawBody(request);
        if (raw.problem !== undefined) return refuseBody(raw.problem, raw.bytes, request.tenant.id, source);
        return run(request.tenant.id, raw.bytes, source);
      });
    }
  };
}
