/**
 * What every route declares: its query string (no parameter it does not name) and its replies,
 * problem+json included. Shapes owned by a service come from it; only HTTP's own are written here.
 */
import { Type } from '@sinclair/typebox';
import type { TSchema } from '@sinclair/typebox';

/** RFC 9457 body; `errors`, `limit` and other extensions ride along. */
export const PROBLEM = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: 'stable error code, README "Errors"' }),
    instance: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** A route that takes no query parameters. */
export const NO_QUERY = Type.Object({}, { additionalProperties: false });

export function routeSchema(querystring: TSchema, ok: TSchema) {
  return { querystring, response: { 200: ok, '4xx': PROBLEM, '5xx': PROBLEM } };
}
