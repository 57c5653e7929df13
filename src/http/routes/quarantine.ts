/** GET /v1/quarantine and /v1/quarantine/{id}: the tenant's own refused inputs, for the dashboard and debugging. */
import type { FastifyInstance } from 'fastify';
import { QUARANTINE_ENTRY, QUARANTINE_ID, QUARANTINE_PAGE, QUARANTINE_QUERY } from '../../quarantine/service.js';
import type { QuarantineService, RawQuarantineQuery } from '../../quarantine/service.js';
import { NO_QUERY, routeSchema } from '../schemas.js';

export function quarantineRoutes(quarantine: QuarantineService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/v1/quarantine', { schema: routeSchema(QUARANTINE_QUERY, QUARANTINE_PAGE, { summary: "The tenant's quarantined inputs, newest first" }) }, (request) =>
      quarantine.list(request.tenant.id, request.query as RawQuarantineQuery),
    );
    const entry = { ...routeSchema(NO_QUERY, QUARANTINE_ENTRY, { summary: 'One quarantined input: its errors and the body as kept', description: "404 for an id that is not one of the tenant's entries." }), params: QUARANTINE_ID };
    app.get('/v1/quarantine/:id', { schema: entry }, (request) => quarantine.get(request.tenant.id, (request.params as { id: string }).id));
  };
}
