/** POST single-event and batch ingestion, under the spec's paths and the wire format's /s3 aliases. */
import type { FastifyInstance } from 'fastify';
import type { IngestService } from '../../ingest/service.js';
import { notJsonProblem, readBody } from '../body.js';
import type { BodyLimits, RawBody } from '../body.js';

const SINGLE_PATHS = ['/storage', '/storage/singleCopy', '/s3', '/s3/single'];
const BATCH_PATHS = ['/storage/batch', '/s3/batch'];

const singleReply = {
  200: {
    type: 'object',
    properties: { eventId: { type: 'string' }, duplicate: { type: 'boolean' } },
    required: ['eventId', 'duplicate'],
  },
};

const batchReply = {
  200: {
    type: 'object',
    properties: {
      accepted: { type: 'integer' },
      duplicates: { type: 'integer' },
      rejected: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            index: { type: 'integer' },
            errors: {
              type: 'array',
              items: {
                type: 'object',
                properties: { path: { type: 'string' }, message: { type: 'string' }, expected: { type: 'string' }, received: { type: 'string' } },
              },
            },
          },
        },
      },
    },
  },
};

export function ingestRoutes(ingest: IngestService, limits: BodyLimits) {
  return async function (app: FastifyInstance): Promise<void> {
    // After the key check (a root hook), before the body is read.
    app.addHook('onRequest', async () => ingest.admit());
    const bodyOf = async (body: RawBody | undefined, tenantId: number, source: string): Promise<Buffer> => {
      const raw = body ?? { bytes: Buffer.alloc(0) };
      if (raw.problem) {
        const { code, errors, limit } = raw.problem;
        await ingest.rejectBody(tenantId, source, code, errors, raw.bytes, limit === undefined ? {} : { limit });
      }
      return raw.bytes;
    };
    // Fastify refuses a Content-Type it cannot parse (e.g. `json`) before any body parser runs: read the
    // body here, so that it is refused and kept in quarantine like any other body that is not JSON.
    app.setErrorHandler(async (error, request) => {
      if ((error as { code?: string }).code !== 'FST_ERR_CTP_INVALID_MEDIA_TYPE') throw error;
      const raw = await readBody(request.raw, request.headers, limits);
      await bodyOf({ bytes: raw.bytes, problem: raw.problem ?? notJsonProblem(request.headers['content-type']) }, request.tenant.id, `POST ${request.routeOptions.url}`);
    });

    for (const url of SINGLE_PATHS) {
      const source = `POST ${url}`;
      app.post(url, { schema: { response: singleReply } }, async (request) => {
        const bytes = await bodyOf(request.body as RawBody | undefined, request.tenant.id, source);
        return ingest.ingestOne(request.tenant.id, bytes, source);
      });
    }
    for (const url of BATCH_PATHS) {
      const source = `POST ${url}`;
      app.post(url, { schema: { response: batchReply } }, async (request) => {
        const bytes = await bodyOf(request.body as RawBody | undefined, request.tenant.id, source);
        return ingest.ingestBatch(request.tenant.id, bytes, source);
      });
    }
  };
}
