/**
 * Listing a tenant's stored events (GET /v1/events): the query's meaning checked and turned into the
 * event log's terms, and each event presented as the API shows it. Knows nothing of HTTP.
 */
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { BmError } from '../errors.js';
import { isActionName } from '../events/catalogue.js';
import type { FieldError } from '../events/field-error.js';
import { formatTimestamp, parseTimestamp } from '../events/timestamp.js';
import { InvalidCursorError } from '../store/types.js';
import { asQueryTimeout } from './timed.js';
import type { EventLog, EventQuery, StoredEvent } from '../store/types.js';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

const MAX_PARAM_LENGTH = 1024;
const param = (description: string) => Type.Optional(Type.String({ maxLength: MAX_PARAM_LENGTH, description }));

/** The query as it arrives: each parameter at most once, as text; no other parameter. */
export const EVENT_QUERY = Type.Object(
  {
    action: param('event kind, e.g. GetObject'),
    customerId: param('customer id'),
    from: param('ISO 8601; events with timestamp at or after it'),
    to: param('ISO 8601; events with timestamp before it'),
    limit: param(`events per page, 1..${MAX_LIMIT} (default ${DEFAULT_LIMIT})`),
    cursor: param("a previous page's nextCursor"),
  },
  { additionalProperties: false },
);

export const EVENT_PAGE = Type.Object({
  events: Type.Array(
    Type.Object(
      { eventId: Type.String(), receivedAt: Type.String({ description: 'when the server received it, ISO 8601 UTC' }), action: Type.String(), timestamp: Type.String(), provider: Type.String() },
      { additionalProperties: true, description: 'an event as normalized (components/schemas/Event: no aliases, no empty fields) with its eventId and receivedAt' },
    ),
    { description: 'newest arrival first' },
  ),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});

export type RawEventQuery = Static<typeof EVENT_QUERY>;
export type EventListPage = Static<typeof EVENT_PAGE>;

export class EventQueryService {
  constructor(private readonly log: Pick<EventLog, 'listEvents'>) {}

  async list(tenantId: number, raw: RawEventQuery, signal?: AbortSignal): Promise<EventListPage> {
    const query = parseQuery(raw);
    try {
      const page = await this.log.listEvents(tenantId, query, signal);
      return { events: page.events.map(present), nextCursor: page.nextCursor };
    } catch (err) {
      if (!(err instanceof InvalidCursorError)) throw asQueryTimeout(err);
      const errors: FieldError[] = [{ path: '/cursor', message: 'cursor is not valid', expected: 'a nextCursor from a previous page', received: 'another string' }];
      throw new BmError('BM_ERR_QUERY_INVALID', 'cursor was not made by this server', { errors }, { cause: err });
    }
  }
}

function parseQuery(raw: RawEventQuery): EventQuery {
  const errors: FieldError[] = [];
  const query: EventQuery = { limit: DEFAULT_LIMIT };
  if (raw.action !== undefined) {
    if (isActionName(raw.action)) query.action = raw.action;
    else errors.push({ path: '/action', message: 'unknown action', expected: 'an event kind, e.g. GetObject', received: JSON.stringify(raw.action.slice(0, 40)) });
  }
  if (raw.customerId !== undefined) query.customerId = raw.customerId;
  for (const bound of ['from', 'to'] as const) {
    const value = raw[bound];
    if (value === undefined) continue;
    const seconds = parseTimestamp(value);
    if (seconds === undefined) errors.push({ path: `/${bound}`, message: `${bound} must be an ISO 8601 timestamp`, expected: 'e.g. 2024-05-01T12:00:00Z', received: JSON.stringify(value.slice(0, 40)) });
    else query[bound] = seconds;
  }
  if (raw.limit !== undefined) {
    const n = Number(raw.limit);
    if (/^\d+$/.test(raw.limit) && n >= 1 && n <= MAX_LIMIT) query.limit = n;
    else errors.push({ path: '/limit', message: `limit must be an integer from 1 to ${MAX_LIMIT}`, expected: `1..${MAX_LIMIT}`, received: JSON.stringify(raw.limit.slice(0, 40)) });
  }
  if (raw.cursor !== undefined) query.cursor = raw.cursor;
  if (errors.length > 0) throw new BmError('BM_ERR_QUERY_INVALID', errors[0]!.message, { errors });
  return query;
}

/** A stored event as the API shows it: ISO times, unknown extra fields back at top level. */
function present(stored: StoredEvent): EventListPage['events'][number] {
  const { eventId, receivedAt, timestamp, extra, ...fields } = stored;
  return { eventId, receivedAt: formatTimestamp(receivedAt), ...fields, timestamp: formatTimestamp(timestamp), ...extra };
}
