/** GET /v1/costs: decode the query (the usage parameters, plus format=focus), ask the cost service, write the answer. */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { COSTS_QUERY, COSTS_REPLY } from '../../costs/api-schemas.js';
import { costCsv, costFocus, costJson } from '../../costs/format.js';
import type { CostService } from '../../costs/service.js';
import { parseUsageParams } from '../../usage/params.js';
import { routeSchema } from '../schemas.js';

export function costRoutes(costs: CostService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/v1/costs', { schema: routeSchema(COSTS_QUERY, COSTS_REPLY as never, { summary: 'Cost per window and dimension, or the FOCUS export' }) }, async (request, reply) => {
      const query = parseUsageParams(request.query as Record<string, unknown>, request.headers.accept, ['json', 'csv', 'focus']);
      if (query.format === 'focus') {
        const accounts = await costs.fineRows(request.tenant.id, query);
        // Storage writes a line per key and hour: a month of a large bucket runs past the longest string
        // V8 makes (about 512 MB), so the export is sent as it is written.
        return reply.type('text/csv; charset=utf-8').send(Readable.from(inChunks(costFocus(request.tenant.name, accounts))));
      }
      const page = await costs.query(request.tenant.id, query);
      if (query.format === 'csv') {
        if (page.nextCursor !== null) reply.header('x-next-cursor', page.nextCursor);
        return reply.type('text/csv; charset=utf-8').send(costCsv(query, page));
      }
      return reply.type('application/json; charset=utf-8').send(costJson(query, page));
    });
  };
}

const CHUNK_CHARS = 64 * 1024;

/** Lines joined into chunks of about 64 KiB: a stream of one short string per line costs more than the lines. */
function* inChunks(lines: Iterable<string>): Generator<string> {
  let chunk = '';
  for (const line of lines) {
    chunk += line;
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk !== '') yield chunk;
}
