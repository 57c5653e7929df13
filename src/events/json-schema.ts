/**
 * The kinds' schemas as standard JSON Schema 2020-12, for the OpenAPI document: the validator's own
 * keywords are translated (storableString → maxLength plus the byte bound as an extension,
 * isoTimestamp → format date-time), so any OpenAPI 3.1 tool reads them.
 */
import { ACTION_NAMES, KINDS } from './catalogue.js';
import type { ActionName } from './catalogue.js';
import { KIND_SCHEMAS } from './schemas.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function standard(schema: Json): Json {
  if (Array.isArray(schema)) return schema.map(standard);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'storableString') {
      // A string of at most N bytes has at most N characters; the byte bound itself rides along.
      out.maxLength = value;
      out['x-max-utf8-bytes'] = value;
    } else if (key === 'isoTimestamp') {
      out.format = 'date-time';
    } else {
      out[key] = standard(value);
    }
  }
  return out;
}

/** Schema name of a kind, e.g. Event_GetObject. */
export const kindSchemaName = (action: ActionName): string => `Event_${action}`;

/** Every kind's schema by its name, and `Event`: one of them, told apart by `action`. */
export function eventJsonSchemas(ref: (name: string) => string): Record<string, Json> {
  const schemas: Record<string, Json> = {};
  for (const action of ACTION_NAMES) {
    schemas[kindSchemaName(action)] = { ...(standard(KIND_SCHEMAS[action] as Json) as Record<string, Json>), description: `${action}: ${KINDS[action].doc}` };
  }
  schemas.Event = {
    description: 'One storage event; `action` names its kind. Unknown extra fields are kept (README "Events").',
    oneOf: ACTION_NAMES.map((action) => ({ $ref: ref(kindSchemaName(action)) })),
    discriminator: { propertyName: 'action', mapping: Object.fromEntries(ACTION_NAMES.map((action) => [action, ref(kindSchemaName(action))])) },
  };
  return schemas;
}
