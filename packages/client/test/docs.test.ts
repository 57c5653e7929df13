import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { README, regenerate } from '../scripts/gen-fields.js';
import { COMMANDS, NOT_FROM_SDK } from '../src/s3/commands.js';

describe('package README', () => {
  const readme = readFileSync(README, 'utf8');

  it('holds the current per-command field table (run `npm run docs -w @bucketmeter/client` after changing src/s3/commands.ts)', () => {
    assert.equal(readme, regenerate(readme));
  });

  it('names every one of the 39 kinds: 38 from SDK commands, PostObject by hand', () => {
    const kinds = [...Object.keys(COMMANDS), ...Object.keys(NOT_FROM_SDK)];
    assert.equal(new Set(kinds).size, 39);
    for (const kind of kinds) assert.ok(readme.includes(`| \`${kind}\` |`), kind);
  });
});

describe('the per-command table against the server catalogue', async () => {
  const { KINDS, COMMON_FIELDS } = (await import(new URL('../../../../dist/src/events/catalogue.js', import.meta.url).href)) as {
    KINDS: Record<string, { required: readonly string[]; optional: readonly string[] }>;
    COMMON_FIELDS: Record<string, unknown>;
  };

  it('covers exactly the server kinds, and emits only fields each kind allows', () => {
    assert.deepEqual([...Object.keys(COMMANDS), ...Object.keys(NOT_FROM_SDK)].sort(), Object.keys(KINDS).sort());
    for (const [action, spec] of Object.entries(COMMANDS)) {
      const kind = KINDS[action]!;
      const allowed = new Set([...kind.required, ...kind.optional, ...Object.keys(COMMON_FIELDS)]);
      const emitted = [...Object.keys(spec.fields), ...(action === 'GetObject' ? ['isBillableEgress'] : [])];
      for (const field of emitted) assert.ok(allowed.has(field), `${action}.${field} is not a field of the kind`);
      for (const field of kind.required) assert.ok(emitted.includes(field), `${action} never fills required ${field}`);
    }
  });
});
