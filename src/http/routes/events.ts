/** GET /v1/events: the tenant's stored events, newest first, for debugging and audits. */
import type { FastifyInstance } from 'fastify';
import { BmError } from '../../errors.js';
import { isActionName } from '../../events/catalogue.js';
import type { FieldError } from '../../events/field-error.js';
import { parseTimestamp } from '../../events/timestamp.js';
import { ReadTimeoutError } from '../../store/types.js';
import type { EventQuery, StoredEvent, Store } from '../../store/types.js';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
const MAX_PARAM_LENGTH = 1024;

export function eventsRoutes(store: Store) {
  return async function (app: FastifyInstance): Promise<void> {
    app.get('/v1/events', async (request) => {
      const query = parseQuery(request.query as Record<string, unknown>);
      const page = await store.listEvents(request.tenant.id, query).catch((err: unknown) => {
        throw err instanceof ReadTimeoutError ? new BmError('BM_ERR_QUERY_TIMEOUT', `${err.message}; narrow the query or retry later`, {}, { cause: err }) : err;
      });
      return { events: page.events.map(present), nextCursor: page.nextCursor };
    });
  };
}

function parseQuery(raw: Record<string, unknown>): EventQuery {
  const errors: FieldError[] = [];
  const query: EventQuery = { limit: DEFAULT_LIMIT };
  const text = (name: string): string | undefined => {
    const value = raw[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value.length > MAX_PARAM_LENGTH) {
      errors.push({ path: `/${name}`, message: `${name} must be given once, as text of at most ${MAX_PARAM_LENGTH} characters`, expected: 'one string', received: Array.isArray(value) ? `${value.length} values` : 'a long string' });
      return undefined;
    }
    return value;
  };
  const action = text('action');
  if (action !== undefined) {
    if (isActionName(action)) query.action = action;
    else errors.push({ path: '/action', message: 'unknown action', expected: 'an event kind, e.g. GetObject', received: JSON.stringify(action.slice(0, 40)) });
  }
  const customerId = text('customerId');
  if (customerId !== undefined) query.customerId = customerId;
  for (const bound of ['from', 'to'] as const) {
    const value = text(bound);
    if (value === undefined) continue;
    const seconds = parseTimestamp(value);
    if (seconds === undefined) errors.push({ path: `/${bound}`, message: `${bound} must be an ISO 8601 timestamp`, expected: 'e.g. 2024-05-01T12:00:00Z', received: JSON.stringify(value.slice(0, 40)) });
    else query[bound] = seconds;
  }
  const limit = text('limit');
  if (limit !== undefined) {
    const n = Number(limit);
    if (/^\d+$/.test(limit) && n >= 1 && n <= MAX_LIMIT) query.limit = n;
    else errors.push({ path: '/limit', message: `limit must be an integer from 1 to ${MAX_LIMIT}`, expected: `1..${MAX_LIMIT}`, received: JSON.stringify(limit.slice(0, 40)) });
  }
  const cursor = text('cursor');
  if (cursor !== undefined) query.cursor = cursor;
  if (errors.length > 0) throw new BmError('BM_ERR_QUERY_INVALID', errors[0]!.message, { errors });
  return query;
}

export function isoSeconds(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
}

/** A stored event as the API shows it: ISO times, unknown extra fields back at top level. */
export function present(stored: StoredEvent): Record<string, unknown> {
  const { eventId, receivedAt, timestamp, extra, ...fields } = stored;
  return { eventId, receivedAt: isoSeconds(receivedAt), ...fields, timestamp: isoSeconds(timestamp), ...extra };
}
