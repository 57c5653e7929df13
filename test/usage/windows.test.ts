/** Window boundaries of a time zone: DST days, months, and zones the hourly rollups cannot answer. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { windowBounds, ZoneNotExactError } from '../../src/usage/windows.js';

const hour = (iso: string) => Date.parse(iso) / 3_600_000;
const iso = (h: number) => new Date(h * 3_600_000).toISOString().replace('.000Z', 'Z');

describe('windowBounds', () => {
  it('cuts Berlin days at its midnights: 23 hours in March, 25 in October', () => {
    assert.deepEqual(windowBounds(hour('2026-03-28T23:00:00Z'), hour('2026-03-30T22:00:00Z'), 'day', 'Europe/Berlin').map(iso), [
      '2026-03-28T23:00:00Z',
      '2026-03-29T22:00:00Z',
      '2026-03-30T22:00:00Z',
    ]);
    assert.deepEqual(windowBounds(hour('2026-10-24T22:00:00Z'), hour('2026-10-26T23:00:00Z'), 'day', 'Europe/Berlin').map(iso), [
      '2026-10-24T22:00:00Z',
      '2026-10-25T23:00:00Z',
      '2026-10-26T23:00:00Z',
    ]);
  });

  it('cuts New York months at its midnights, across the DST change, and cuts to the range', () => {
    assert.deepEqual(windowBounds(hour('2026-02-15T00:00:00Z'), hour('2026-04-10T00:00:00Z'), 'month', 'America/New_York').map(iso), [
      '2026-02-15T00:00:00Z',
      '2026-03-01T05:00:00Z',
      '2026-04-01T04:00:00Z',
      '2026-04-10T00:00:00Z',
    ]);
  });

  it('gives every hour for hour, one window for none', () => {
    assert.equal(windowBounds(0, 48, 'hour', 'Europe/Berlin').length, 49);
    assert.deepEqual(windowBounds(5, 4000, 'none', 'Asia/Kolkata'), [5, 4000]);
  });

  it('refuses zones whose offset in the range is not a whole number of hours', () => {
    assert.throws(() => windowBounds(hour('2026-03-01T00:00:00Z'), hour('2026-03-03T00:00:00Z'), 'day', 'Asia/Kolkata'), ZoneNotExactError);
    // Lord Howe is +10:30 in winter, +11 in summer: refused over a range that holds its winter.
    assert.throws(() => windowBounds(hour('2026-03-01T00:00:00Z'), hour('2026-05-01T00:00:00Z'), 'day', 'Australia/Lord_Howe'), /\+10:30/);
    assert.doesNotThrow(() => windowBounds(hour('2026-01-01T00:00:00Z'), hour('2026-02-01T00:00:00Z'), 'day', 'Australia/Lord_Howe'));
  });
});
