/** GET /v1/objects: one bucket's object inventory at an instant. */
import type { FastifyInstance } from 'fastify';
import { OBJECTS_PAGE, OBJECTS_QUERY } from '../../inventory/objects.js';
import type { ObjectsService, RawObjectsQuery } from '../../inventory/objects.js';
import { clientGone } from '../client-gone.js';
import { routeSchema } from '../schemas.js';

export function objectsRoutes(objects: ObjectsService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/v1/objects', { schema: routeSchema(OBJECTS_QUERY, OBJECTS_PAGE, { summary: "A bucket's objects at an instant, each with the event that created it" }) }, (request, reply) =>
      objects.list(request.tenant.id, request.query as RawObjectsQuery, clientGone(reply)),
    );
  };
}
