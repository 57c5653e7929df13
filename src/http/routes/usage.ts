/** GET /v1/usage and /v1/usage/reconcile: decode the query, ask the usage service, write the answer. */
import type { FastifyInstance } from 'fastify';
import { reconcileJson, usageCsv, usageJson } from '../../usage/format.js';
import { parseRangeParams, parseUsageParams } from '../../usage/params.js';
import { RECONCILE_QUERY, RECONCILE_REPLY, USAGE_QUERY, USAGE_REPLY } from '../../usage/api-schemas.js';
import type { UsageService } from '../../usage/service.js';
import { clientGone } from '../client-gone.js';
import { routeSchema } from '../schemas.js';

export function usageRoutes(usage: UsageService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/v1/usage', { schema: routeSchema(USAGE_QUERY, USAGE_REPLY as never, { summary: 'Usage per window and dimension' }) }, async (request, reply) => {
      const query = parseUsageParams(request.query as Record<string, unknown>, request.headers.accept);
      const page = await usage.query(request.tenant.id, query, clientGone(reply));
      if (query.format === 'csv') {
        // CSV has no room for the cursor: the next page's is in this header.
        if (page.nextCursor !== null) reply.header('x-next-cursor', page.nextCursor);
        return reply.type('text/csv; charset=utf-8').send(usageCsv(query, page));
      }
      return reply.type('application/json; charset=utf-8').send(usageJson(query, page));
    });
    app.get('/v1/usage/reconcile', { schema: routeSchema(RECONCILE_QUERY, RECONCILE_REPLY, { summary: 'Receipts and usage reconciled per UTC day' }) }, async (request, reply) => {
      const query = parseRangeParams(request.query as Record<string, unknown>);
      const result = await usage.reconcile(request.tenant.id, query, clientGone(reply));
      return reply.type('application/json; charset=utf-8').send(reconcileJson(query, result));
    });
  };
}
