/**
 * What every route declares: its query string (no parameter it does not name) and its replies,
 * problem+json included. Shapes owned by a service come from it; only HTTP's own are written here.
 */
import { Type } from '@sinclair/typebox';
import type { TSchema } from '@sinclair/typebox';
import { ERRORS } from '../errors.js';

/** RFC 9457 body; `errors`, `limit` and other extensions ride along. */
export const PROBLEM = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    // An enum the serializer ignores (it writes a string) and the OpenAPI document lists.
    code: Type.String({ enum: Object.keys(ERRORS), description: 'stable error code, README "Errors"' }),
    instance: Type.Optional(Type.String()),
  },
  { additionalProperties: true, description: 'RFC 9457 problem details' },
);

const PROBLEM_REPLY = { description: 'problem+json (README "Errors")', content: { 'application/problem+json': { schema: PROBLEM } } };

/** A route that takes no query parameters. */
export const NO_QUERY = Type.Object({}, { additionalProperties: false });

/** `summary` and `description` are for the OpenAPI document; Fastify itself ignores them. */
export function routeSchema(querystring: TSchema, ok: TSchema, doc: { summary: string; description?: string }) {
  return { ...doc, querystring, response: { 200: ok, '4xx': PROBLEM_REPLY, '5xx': PROBLEM_REPLY } };
}
