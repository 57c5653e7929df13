import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { throttledWarn } from '../../src/logging/throttle.js';

test('a repeated warning is logged once per interval, and the next line logged counts those left out', () => {
  mock.timers.enable({ apis: ['Date'], now: 0 });
  try {
    const lines: { obj: object; msg: string }[] = [];
    const log = throttledWarn({ warn: (obj, msg) => lines.push({ obj, msg }) }, 10_000);
    // Four a second for 10 s, as a catch-up tick does while the store is down.
    for (let i = 0; i <= 40; i++) {
      log.warn({ attempt: i }, 'connection lost');
      mock.timers.tick(250);
    }
    assert.deepEqual(
      lines.map((line) => line.obj),
      [{ attempt: 0 }, { attempt: 40, omitted: 39 }],
    );
    assert.match(lines[0]?.msg ?? '', /^connection lost \(the same warning within 10 s is not logged again\)$/);
  } finally {
    mock.timers.reset();
  }
});

test('without a logger nothing is logged and nothing throws', () => {
  assert.doesNotThrow(() => throttledWarn(undefined).warn({}, 'connection lost'));
});
