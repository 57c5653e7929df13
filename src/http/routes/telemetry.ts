/**
 * The Java collector's telemetry posts (/telemetry/lifecycle, invalidApiKey, extractionIssues,
 * metricsIncremental). They need no key (invalidApiKey is sent without one, by design), so they are
 * rate-limited per client address and their bodies are bounded; nothing of a body is echoed.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { RateLimiter } from '../../auth/rate-limit.js';
import { BmError } from '../../errors.js';
import { TELEMETRY_KINDS } from '../../telemetry/service.js';
import type { TelemetryService } from '../../telemetry/service.js';
import { readBody } from '../body.js';
import type { RawBody } from '../body.js';
import { NO_QUERY, routeSchema } from '../schemas.js';

/** Room for an extractionIssues report of a full batch (1,000 events) with its issues. */
export const TELEMETRY_MAX_BODY_BYTES = 1024 * 1024;
/** Per client address; collectors post a few times per batch at most. */
export const TELEMETRY_REQUESTS_PER_SECOND = 20;

const LIMITS = { maxBodyBytes: TELEMETRY_MAX_BODY_BYTES, quarantineMaxBytes: 0 };
const EMPTY = Buffer.alloc(0);
const RECEIVED = Type.Object({ received: Type.Literal(true) });
/** For the OpenAPI document only: the body is read raw and checked by the telemetry service. */
const REPORT = { type: 'object', description: "the collector's report, as it sends it" };

export function telemetryRoutes(telemetry: TelemetryService, limiter: RateLimiter) {
  return async (app: FastifyInstance): Promise<void> => {
    // This plugin's own parser: a smaller bound than events, and nothing kept of a refused body.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (request, payload, done) => {
      readBody(payload, request.headers, LIMITS).then(
        (body) => done(null, body),
        (error: Error) => done(error, undefined),
      );
    });
    // Before the body is read, so that a flood costs no reading.
    app.addHook('onRequest', async (request) => limiter.take(request.ip));

    for (const kind of TELEMETRY_KINDS) {
      const schema = routeSchema(NO_QUERY, RECEIVED, { summary: `A Java collector's ${kind} report`, description: 'Counted and logged (figures only), never stored; no key needed; rate-limited per client address.' });
      app.post(`/telemetry/${kind}`, { config: { auth: false, requestBody: REPORT }, schema }, async (request) => {
        const raw = (request.body as RawBody | undefined) ?? { bytes: EMPTY };
        if (raw.problem !== undefined) {
          const { code, errors, limit } = raw.problem;
          throw new BmError(code, errors[0]?.message, { errors, ...(limit === undefined ? {} : { limit }) });
        }
        const read = telemetry.report(kind, raw.bytes, { address: request.ip, userAgent: request.headers['user-agent'] });
        if (!read) {
          // A fixed message: JSON.parse's own would quote the body, and a report may hold a key.
          const errors = [{ path: '', message: 'the body must be a JSON object', expected: 'a JSON object', received: `${raw.bytes.length} bytes` }];
          throw new BmError('BM_ERR_BODY_NOT_OBJECT', 'A telemetry report is a JSON object.', { errors });
        }
        return { received: true };
      });
    }
  };
}
