/** POST single-event and batch ingestion, under the spec's paths and the wire format's /s3 aliases. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BATCH_RESULT, SINGLE_RESULT } from '../../ingest/results.js';
import type { IngestService } from '../../ingest/service.js';
import { notJsonProblem, readBody } from '../body.js';
import type { BodyLimits, RawBody } from '../body.js';
import { NO_QUERY, routeSchema } from '../schemas.js';

const EMPTY = Buffer.alloc(0);

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
    /** A body whose Content-Type Fastify could not parse: refused and kept like any other body that is not JSON. */
    const keepUnparsedBody = async (request: FastifyRequest): Promise<never> => {
      const raw = await readBody(request.raw, request.headers, limits);
      return refuseBody(raw.problem ?? notJsonProblem(request.headers['content-type']), raw.bytes, request.tenant.id, `POST ${request.routeOptions.url}`);
    };

    for (const url of SINGLE_PATHS) {
      const source = `POST ${url}`;
      app.post(url, { config: { keepUnparsedBody }, schema: routeSchema(NO_QUERY, SINGLE_RESULT) }, async (request) => {
        const raw = rawBody(request);
        if (raw.problem !== undefined) return refuseBody(raw.problem, raw.bytes, request.tenant.id, source);
        return ingest.ingestOne(request.tenant.id, raw.bytes, source);
      });
    }
    for (const url of BATCH_PATHS) {
      const source = `POST ${url}`;
      app.post(url, { config: { keepUnparsedBody }, schema: routeSchema(NO_QUERY, BATCH_RESULT) }, async (request) => {
        const raw = rawBody(request);
        if (raw.problem !== undefined) return refuseBody(raw.problem, raw.bytes, request.tenant.id, source);
        return ingest.ingestBatch(request.tenant.id, raw.bytes, source);
      });
    }
  };
}
