/** Liveness and key check (/ping), store health (/healthz), and the recommended batch size. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { HealthService } from '../../health/service.js';
import { NO_QUERY, routeSchema } from '../schemas.js';

export interface StatusDeps {
  health: HealthService;
  /** The batch size to recommend now. */
  recommendedBatchSize: () => number;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const PONG = Type.Literal('PONG');
const BATCH_SIZE = Type.Integer({ minimum: 1, description: 'a bare integer: what existing clients parse' });
const HEALTH = Type.Object({ status: Type.Literal('ok'), store: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')]) });

export function statusRoutes(deps: StatusDeps) {
  return async (app: FastifyInstance): Promise<void> => {
    // Both sent as already-serialized JSON text, which Fastify passes through as is.
    app.get('/ping', { schema: routeSchema(NO_QUERY, PONG, { summary: 'Check the API key' }) }, async (_request, reply) => reply.type(JSON_TYPE).send('"PONG"'));
    for (const url of ['/storage/recommendedBatchSize', '/s3/recommendedBatchSize']) {
      app.get(url, { schema: routeSchema(NO_QUERY, BATCH_SIZE, { summary: 'The batch size to send now', description: '500, or 1,000 when the write queue is more than half full.' }) }, async (_request, reply) => reply.type(JSON_TYPE).send(String(deps.recommendedBatchSize())));
    }
    app.get('/healthz', { config: { auth: false }, schema: routeSchema(NO_QUERY, HEALTH, { summary: 'Whether this node can take writes', description: '503 when the store cannot take writes.' }) }, () => deps.health.check());
  };
}
