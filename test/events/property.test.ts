/**
 * Property tests of validate(): random valid events of every kind come out with every field they
 * carry (none lost, none invented), and no input, valid or not, makes validate() throw or mutate it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ACTION_NAMES, COMMON_FIELDS, FIELDS, FIELD_ALIASES } from '../../src/events/catalogue.js';
import { MAX_FIELD_ERRORS, createEventValidator } from '../../src/events/validate.js';
import { WIRE_NOW_SECONDS, fullWireEvent, wireEventArbitrary } from '../support/events.js';

// Generous: the generated unknown fields are not meant to hit the bound here.
const validator = createEventValidator({ maxFutureSeconds: 0, maxExtraBytes: 1 << 20 });

describe('random valid events', () => {
  for (const action of ACTION_NAMES) {
    it(`${action}: every field is kept, none is invented, the input is untouched`, () => {
      fc.assert(
        fc.property(wireEventArbitrary(action), ({ wire, expected }) => {
          const before = JSON.stringify(wire);
          const result = validator.validate(wire, WIRE_NOW_SECONDS);
          assert.ok(result.ok, JSON.stringify(result));
          assert.deepStrictEqual(result.event, expected);
          assert.equal(JSON.stringify(wire), before);
        }),
        { numRuns: 150 },
      );
    });
  }
});

const NAMES = [...Object.keys(COMMON_FIELDS), ...Object.keys(FIELDS), ...Object.keys(FIELD_ALIASES)];

describe('any input', () => {
  function checkOutcome(input: unknown): void {
    const before = JSON.stringify(input);
    const result = validator.validate(input, WIRE_NOW_SECONDS);
    assert.equal(JSON.stringify(input), before);
    if (result.ok) return;
    assert.ok(result.errors.length >= 1 && result.errors.length <= MAX_FIELD_ERRORS);
    const paths = result.errors.map((e) => e.path);
    assert.equal(new Set(paths).size, paths.length, 'one error per path');
    for (const error of result.errors) {
      for (const part of [error.path, error.message, error.expected, error.received]) assert.equal(typeof part, 'string');
      assert.ok(error.message.length > 0 && error.expected.length > 0 && error.received.length > 0);
    }
  }

  it('never throws on arbitrary JSON', () => {
    fc.assert(fc.property(fc.jsonValue(), checkOutcome), { numRuns: 1000 });
  });

  it('never throws when any field of a valid event is replaced by arbitrary JSON', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ACTION_NAMES), fc.constantFrom(...NAMES), fc.jsonValue({ maxDepth: 2 }), (action, name, value) => {
        checkOutcome(fullWireEvent(action, { [name]: value }));
      }),
      { numRuns: 3000 },
    );
  });
});
