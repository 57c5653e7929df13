import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ACTION_NAMES, COMMON_FIELDS, DELETED_VERSION_DIALECT, FIELD_ALIASES, KINDS } from '../../src/events/catalogue.js';
import { KIND_SCHEMAS } from '../../src/events/schemas.js';

/** Every keyword used anywhere in a schema. */
function keywords(schema: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const item of schema) keywords(item, into);
  else if (typeof schema === 'object' && schema !== null) {
    for (const [key, value] of Object.entries(schema)) {
      into.add(key);
      keywords(value, into);
    }
  }
  return into;
}

describe('kind schemas', () => {
  it('exist for every kind of the catalogue, and only for those', () => {
    assert.deepEqual(Object.keys(KIND_SCHEMAS), ACTION_NAMES);
  });

  for (const action of ACTION_NAMES) {
    it(`${action}: declares exactly the common fields, its own fields, their aliases and its dialect's members; no unions`, () => {
      const schema = KIND_SCHEMAS[action];
      const own: string[] = [...KINDS[action].required, ...KINDS[action].optional];
      const aliases = Object.entries(FIELD_ALIASES).filter(([, target]) => own.includes(target)).map(([alias]) => alias);
      const dialect = (DELETED_VERSION_DIALECT.kinds as readonly string[]).includes(action) ? [DELETED_VERSION_DIALECT.versionId, DELETED_VERSION_DIALECT.flag] : [];
      assert.deepEqual(Object.keys(schema.properties as object).sort(), [...Object.keys(COMMON_FIELDS), ...own, ...aliases, ...dialect].sort());
      assert.deepEqual((schema.properties as Record<string, unknown>).action, { const: action });
      // Unknown top-level fields are allowed by the schema (they are kept in `extra`).
      assert.equal(schema.additionalProperties, undefined);
      const used = keywords(schema);
      for (const union of ['anyOf', 'oneOf']) assert.equal(used.has(union), false, union);
    });
  }
});
