/** The bench's request bodies: sent again with fresh eventIds and their events' timestamps moved on by the time since they were built. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BodyTemplate, EVENT_ID_MARK, EventMix, buildUniverse } from '../../bench/mix.js';

const NOW = Date.parse('2026-03-01T10:00:00Z') / 1000;

function bodies(): string[] {
  const mix = new EventMix(buildUniverse(), NOW);
  const out: string[] = [];
  for (let i = 0; i < 2000; i++) out.push(mix.next());
  for (let i = 0; i < 4; i++) out.push(`[${Array.from({ length: 500 }, () => mix.next()).join(',')}]`);
  return out;
}

const counter = () => {
  let n = 0;
  return () => `id-${n++}`;
};

describe('bench request bodies', () => {
  it('built with no shift: the generated JSON with a fresh id for each eventId mark', () => {
    let marks = 0;
    for (const json of bodies()) {
      const ids = counter();
      const parts = json.split(`"${EVENT_ID_MARK}"`);
      marks += parts.length - 1;
      const expected = parts.reduce((out, part, i) => (i === 0 ? part : `${out}"${ids()}"${part}`), '');
      assert.equal(new BodyTemplate(json).build(counter(), 0), expected);
    }
    assert.ok(marks > 10, 'the mix carries client eventIds');
  });

  it('built later: every timestamp moved by the shift in the form it was written in, nothing else changed', () => {
    const forms = new Set<string>();
    for (const json of bodies()) {
      const template = new BodyTemplate(json);
      const before = [JSON.parse(template.build(counter(), 0)) as Record<string, unknown>].flat();
      const after = [JSON.parse(template.build(counter(), 90_061)) as Record<string, unknown>].flat();
      assert.equal(after.length, before.length);
      for (let i = 0; i < before.length; i++) {
        const [was, now] = [String(before[i]!.timestamp), String(after[i]!.timestamp)];
        assert.equal(Date.parse(now) - Date.parse(was), 90_061_000, `${was} -> ${now}`);
        const form = was.replace(/\d/g, '9');
        assert.equal(now.replace(/\d/g, '9'), form);
        forms.add(form);
        assert.deepEqual({ ...after[i], timestamp: null }, { ...before[i], timestamp: null });
      }
    }
    // Whole seconds, milliseconds and the +02:00 form.
    assert.deepEqual([...forms].sort(), ['9999-99-99T99:99:99+99:99', '9999-99-99T99:99:99.999Z', '9999-99-99T99:99:99Z']);
  });

  it('refuses a timestamp of a form it would rewrite wrong, and a shift of part of a second', () => {
    const body = (timestamp: string) => JSON.stringify({ action: 'GetObject', timestamp });
    assert.throws(() => new BodyTemplate(body('2026-12-31T18:59:59-05:00')), /form wireTimestamp does not write/);
    assert.throws(() => new BodyTemplate(body('2026-12-31T18:59:59.5Z')), /form wireTimestamp does not write/);
    const template = new BodyTemplate(body('2026-12-31T23:59:59+02:00'));
    assert.throws(() => template.build(counter(), 1.5), /whole seconds/);
    assert.equal(template.build(counter(), -86_400), body('2026-12-30T23:59:59+02:00'));
  });
});
