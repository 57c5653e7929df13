import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { README, regenerate } from '../scripts/gen-docs.js';
import { ACTION_NAMES } from '../src/events/catalogue.js';
import { ERRORS } from '../src/errors.js';

describe('README', () => {
  const readme = readFileSync(README, 'utf8');

  it('holds the current generated tables (run `npm run docs` after changing a catalogue)', () => {
    assert.equal(readme, regenerate(readme));
  });

  it('documents every error code and no code that does not exist', () => {
    const documented = new Set(readme.match(/BM_ERR_[A-Z_]+/g));
    for (const code of Object.keys(ERRORS)) assert.ok(documented.has(code), `${code} missing from README`);
    for (const code of documented) assert.ok(code in ERRORS, `README names ${code}, which is not in src/errors.ts`);
  });

  it('lists all 39 event kinds', () => {
    assert.equal(ACTION_NAMES.length, 39);
    for (const name of ACTION_NAMES) assert.ok(readme.includes(`| \`${name}\` |`), name);
  });

  it('shows the two commands', () => {
    assert.match(readme, /npm install && npm start/);
    assert.match(readme, /npm test/);
  });
});
