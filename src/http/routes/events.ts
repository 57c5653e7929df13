/** GET /v1/events: the tenant's stored events, newest first, for debugging and audits. */
import type { FastifyInstance } from 'fastify';
import { EVENT_PAGE, EVENT_QUERY } from '../../query/events.js';
import type { EventQueryService, RawEventQuery } from '../../query/events.js';
import { clientGone } from '../client-gone.js';
import { routeSchema } from '../schemas.js';

export function eventsRoutes(events: EventQueryService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/v1/events', { schema: routeSchema(EVENT_QUERY, EVENT_PAGE, { summary: "The tenant's stored events, newest arrival first" }) }, (request, reply) =>
      events.list(request.tenant.id, request.query as RawEventQuery, clientGone(reply)),
    );
  };
}
