/** GET /v1/costs: decode the query (the usage parameters, plus format=focus), ask the cost thread, write the answer. */
import type { FastifyInstance } from 'fastify';
import { COSTS_QUERY, COSTS_REPLY } from '../../costs/api-schemas.js';
import type { CostThread } from '../../costs/thread.js';
import { parseUsageParams } from '../../usage/params.js';
import { clientGone } from '../client-gone.js';
import { routeSchema } from '../schemas.js';

export function costRoutes(costs: CostThread) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/v1/costs', { schema: routeSchema(COSTS_QUERY, COSTS_REPLY as never, { summary: 'Cost per window and dimension, or the FOCUS export' }) }, async (request, reply) => {
      const query = parseUsageParams(request.query as Record<string, unknown>, request.headers.accept, ['json', 'csv', 'focus']);
      if (query.format === 'focus') {
        // Storage writes a line per key and hour: a month of a large bucket runs past the longest string
        // V8 makes (about 512 MB), so the export is sent as it is written.
        return reply.type('text/csv; charset=utf-8').send(await costs.focus(request.tenant.id, request.tenant.name, query, clientGone(reply)));
      }
      const page = await costs.page(request.tenant.id, query, clientGone(reply));
      if (query.format === 'csv') {
        if (page.nextCursor !== null) reply.header('x-next-cursor', page.nextCursor);
        return reply.type('text/csv; charset=utf-8').send(page.text);
      }
      return reply.type('application/json; charset=utf-8').send(page.text);
    });
  };
}
