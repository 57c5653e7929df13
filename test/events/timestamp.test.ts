import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_TIMESTAMP_SECONDS, formatTimestamp, parseTimestamp } from '../../src/events/timestamp.js';

/** 2024-05-01T12:00:00Z */
const NOON = 1714564800;

describe('parseTimestamp', () => {
  const accepted: [string, number][] = [
    ['2024-05-01T12:00:00Z', NOON],
    ['2024-05-01t12:00:00z', NOON],
    // Fractions are dropped, never rounded up.
    ['2024-05-01T12:00:00.999Z', NOON],
    ['2024-05-01T12:00:00.5Z', NOON],
    ['2024-05-01T12:00:00.123456789Z', NOON],
    // Offsets are converted to UTC, in every accepted form.
    ['2024-05-01T14:00:00+02:00', NOON],
    ['2024-05-01T14:00:00+0200', NOON],
    ['2024-05-01T14:00:00+02', NOON],
    ['2024-05-01T06:30:00-05:30', NOON],
    ['2024-05-01T06:30:00.999-0530', NOON],
    ['2024-05-01T12:00:00+00:00', NOON],
    ['2024-05-01T12:00:00-00:00', NOON],
    ['2024-05-02T11:59:00+23:59', NOON],
    // Offsets that cross a day, a month, a year.
    ['2024-04-30T23:00:00-13:00', NOON],
    ['2025-01-01T00:30:00+01:00', 1735687800],
    // Calendar edges.
    ['2024-02-29T00:00:00Z', 1709164800],
    ['2000-02-29T00:00:00Z', 951782400],
    ['1970-01-01T00:00:00Z', 0],
    ['9999-12-31T23:59:59Z', MAX_TIMESTAMP_SECONDS],
    ['2024-12-31T23:59:59Z', 1735689599],
  ];
  for (const [text, seconds] of accepted) {
    it(`accepts ${text}`, () => assert.equal(parseTimestamp(text), seconds));
  }

  const rejected: [string, string][] = [
    ['2024-02-30T12:00:00Z', 'February 30th'],
    ['2023-02-29T12:00:00Z', 'February 29th of a common year'],
    ['1900-02-29T12:00:00Z', 'February 29th of a century year'],
    ['2024-04-31T12:00:00Z', 'April 31st'],
    ['2024-13-01T12:00:00Z', 'month 13'],
    ['2024-00-01T12:00:00Z', 'month 0'],
    ['2024-05-00T12:00:00Z', 'day 0'],
    ['2024-05-01T24:00:00Z', 'hour 24'],
    ['2024-05-01T12:60:00Z', 'minute 60'],
    ['2024-05-01T12:00:60Z', 'second 60 (leap second)'],
    ['2024-05-01T12:00:00', 'no zone'],
    ['2024-05-01T12:00:00.5', 'fraction, no zone'],
    ['2024-05-01 12:00:00Z', 'space separator'],
    ['2024-05-01', 'date only'],
    ['2024-05-01T12:00Z', 'no seconds'],
    ['2024-05-01T12:00:00.Z', 'empty fraction'],
    ['2024-05-01T12:00:00,5Z', 'comma fraction'],
    ['2024-05-01T12:00:00+24:00', 'offset hour 24'],
    ['2024-05-01T12:00:00+02:60', 'offset minute 60'],
    ['2024-05-01T12:00:00+2:00', 'one-digit offset hour'],
    ['2024-05-01T12:00:00+02:', 'offset with a dangling colon'],
    ['2024-05-01T12:00:00+020', 'three-digit offset'],
    ['2024-05-01T12:00:00+02:00:00', 'offset with seconds'],
    ['2024-05-01T12:00:00ZZ', 'trailing text'],
    ['2024-05-01T12:00:00Z ', 'trailing space'],
    [' 2024-05-01T12:00:00Z', 'leading space'],
    ['2024-5-01T12:00:00Z', 'one-digit month'],
    ['20240501T120000Z', 'basic format'],
    ['+002024-05-01T12:00:00Z', 'expanded year'],
    ['1969-12-31T23:59:59Z', 'before 1970'],
    ['1970-01-01T00:30:00+01:00', 'before 1970 once in UTC'],
    ['9999-12-31T23:00:00-02:00', 'after 9999 once in UTC'],
    ['1714564800', 'epoch seconds as text'],
    ['Wed, 01 May 2024 12:00:00 GMT', 'HTTP date'],
    ['2024-05-01T12:00:00UTC', 'zone name'],
    ['２０２４-05-01T12:00:00Z', 'full-width digits'],
    ['', 'empty'],
  ];
  for (const [text, why] of rejected) {
    it(`rejects ${why}: ${JSON.stringify(text)}`, () => assert.equal(parseTimestamp(text), undefined));
  }
});

describe('formatTimestamp', () => {
  it('writes UTC without fraction', () => {
    assert.equal(formatTimestamp(NOON), '2024-05-01T12:00:00Z');
    assert.equal(formatTimestamp(0), '1970-01-01T00:00:00Z');
    assert.equal(formatTimestamp(MAX_TIMESTAMP_SECONDS), '9999-12-31T23:59:59Z');
  });
});
