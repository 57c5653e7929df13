/** The declared shapes of /v1/costs, for the OpenAPI document; the query is checked by usage/params.ts. */
import { Type } from '@sinclair/typebox';
import { USAGE_QUERY } from '../usage/api-schemas.js';
import { COST_COLUMNS } from './format.js';

export const COSTS_QUERY = Type.Object(
  { ...USAGE_QUERY.properties, format: Type.Optional(Type.String({ description: 'json (default), csv, or focus (FinOps FOCUS 1.2 CSV of the fine rows: groupBy, limit and cursor do not apply)' })) },
  { additionalProperties: true },
);

const COST_ROW = Type.Object(
  {
    start: Type.String(),
    end: Type.String(),
    planId: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'where groupBy holds provider or bucket' })),
    currency: Type.Union([Type.String(), Type.Null()], { description: 'null on unpriced rows' }),
    ...Object.fromEntries(COST_COLUMNS.map((c) => [c, Type.String({ description: 'decimal, 10 places' })])),
    unallocated: Type.Boolean({ description: 'an account-level amount no key used (a monthly minimum, rounding up, a fee)' }),
    unpriced: Type.Boolean({ description: 'usage of a provider with no plan: its costs are 0' }),
  },
  { additionalProperties: true, description: 'a window, one property per groupBy dimension (null where none), the plan, currency and amounts' },
);

const COST_PAGE = Type.Object({
  from: Type.String(),
  to: Type.String(),
  granularity: Type.String(),
  timeZone: Type.String(),
  groupBy: Type.Array(Type.String()),
  rows: Type.Array(COST_ROW),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});

export const COSTS_REPLY = {
  description: 'cost rows (JSON), CSV for format=csv or Accept: text/csv (next cursor in X-Next-Cursor), or FOCUS CSV for format=focus',
  content: { 'application/json': { schema: COST_PAGE }, 'text/csv': { schema: Type.String() } },
};
