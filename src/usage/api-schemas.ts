/**
 * The declared shapes of /v1/usage and /v1/usage/reconcile, for the OpenAPI document. The query
 * strings are checked by params.ts (which names every bad parameter), so these only describe them.
 */
import { Type } from '@sinclair/typebox';
import { MAX_RANGE_DAYS, MAX_ROWS } from './params.js';
import { DIMENSIONS, MEASURES } from './shapes.js';
import { STORAGE_MEASURES } from '../inventory/measures.js';

const text = (description: string) => Type.Optional(Type.String({ description }));
const repeatable = (description: string) => Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description }));

const RANGE = {
  from: text('ISO 8601 with a zone, on a whole UTC hour; inclusive (required)'),
  to: text(`ISO 8601 with a zone, on a whole UTC hour; exclusive, at most ${MAX_RANGE_DAYS} days after from (required)`),
};

export const USAGE_QUERY = Type.Object(
  {
    ...RANGE,
    granularity: text('hour, day, month or none (default none)'),
    timeZone: text('IANA zone for day and month windows (default UTC)'),
    groupBy: text(`comma-separated: ${DIMENSIONS.join(', ')}`),
    format: text('json (default) or csv'),
    limit: text(`rows per page, 1..${MAX_ROWS}`),
    cursor: text("a previous page's nextCursor"),
    storage: text(`true adds the stored-bytes measures from the object inventory: ${STORAGE_MEASURES.join(', ')}`),
    ...Object.fromEntries(DIMENSIONS.map((d) => [d, repeatable(`filter by ${d}, repeatable; an empty value matches events without one`)])),
  },
  { additionalProperties: true },
);

const USAGE_ROW = Type.Object(
  {
    start: Type.String(),
    end: Type.String(),
    ...Object.fromEntries(MEASURES.map((m) => [m, Type.Integer()])),
    ...Object.fromEntries(STORAGE_MEASURES.map((m) => [m, Type.Optional(m === 'storedByteHours' ? Type.Number() : Type.Integer())])),
  },
  { additionalProperties: true, description: 'a window, one property per groupBy dimension (null where the events had none), and the measures' },
);

const USAGE_PAGE = Type.Object({
  from: Type.String(),
  to: Type.String(),
  granularity: Type.String(),
  timeZone: Type.String(),
  groupBy: Type.Array(Type.String()),
  rows: Type.Array(USAGE_ROW),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});

export const USAGE_REPLY = {
  description: 'usage rows (JSON), or CSV for format=csv or Accept: text/csv (next cursor in X-Next-Cursor)',
  content: { 'application/json': { schema: USAGE_PAGE }, 'text/csv': { schema: Type.String() } },
};

export const RECONCILE_QUERY = Type.Object(RANGE, { additionalProperties: true });

export const RECONCILE_REPLY = Type.Object(
  { from: Type.String(), to: Type.String(), days: Type.Array(Type.Object({ day: Type.String() }, { additionalProperties: true })), differences: Type.Array(Type.Unknown()) },
  { additionalProperties: true },
);
