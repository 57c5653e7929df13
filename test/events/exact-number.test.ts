/** Extra fields whose numbers JSON cannot give back as sent are refused, never stored altered. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeJson } from '../../src/ingest/service.js';
import { createEventValidator } from '../../src/events/validate.js';
import { WIRE_NOW_SECONDS, minimalWireEvent } from '../support/events.js';

const validator = createEventValidator({ maxFutureSeconds: 900, maxExtraBytes: 4096 });
const head = JSON.stringify(minimalWireEvent('ListBuckets')).slice(0, -1);

/** Validates the event as its JSON text arrives (the number as written, not as a double). */
function validateText(extraMembers: string) {
  const decoded = decodeJson(Buffer.from(`${head},${extraMembers}}`));
  assert.ok(decoded.ok);
  return validator.validate(decoded.value, WIRE_NOW_SECONDS);
}

describe('numbers in extra fields', () => {
  for (const [text, path, what] of [
    ['"big":1e400', '/big', /beyond the range of a double/],
    ['"neg":-1e400', '/neg', /beyond the range of a double/],
    ['"id":9007199254740993', '/id', /integer beyond ±2\^53/],
    ['"nested":{"a":[1,2,{"b":12345678901234567890}]}', '/nested/a/2/b', /integer beyond ±2\^53/],
  ] as const) {
    it(`${text} is refused, naming ${path}`, () => {
      const result = validateText(text);
      assert.equal(result.ok, false);
      if (result.ok) return;
      assert.equal(result.errors.length, 1);
      assert.equal(result.errors[0]!.path, path);
      assert.match(result.errors[0]!.message, what);
      assert.match(result.errors[0]!.message, /send it as a string/);
    });
  }

  it('numbers a double holds are kept and written back as sent', () => {
    const text = '"max":9007199254740991,"min":-9007199254740991,"f":0.1,"e":1.5e-7,"s":"9007199254740993"';
    const result = validateText(text);
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(JSON.stringify(result.event.extra), `{${text}}`);
  });
});
