import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { throttledWarn } from '../../src/logging/throttle.js';

test('a repeated warning is logged once per interval, and those left out are counted at its end', () => {
  mock.timers.enable({ apis: ['Date', 'setTimeout'], now: 0 });
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
      [{ attempt: 0 }, { attempt: 39, omitted: 39 }, { attempt: 40 }],
    );
    assert.match(lines[0]?.msg ?? '', /^connection lost \(the same warning within 10 s is not logged again\)$/);
    assert.match(lines[1]?.msg ?? '', /^connection lost \(39 more within 10 s, not logged; this is the last of them\)$/);
  } finally {
    mock.timers.reset();
  }
});

test('the count of those left out is logged when the interval ends, even if no warning follows', () => {
  mock.timers.enable({ apis: ['Date', 'setTimeout'], now: 0 });
  try {
    const lines: object[] = [];
    const log = throttledWarn({ warn: (obj) => lines.push(obj) }, 10_000);
    log.warn({ attempt: 0 }, 'connection lost');
    mock.timers.tick(1_000);
    log.warn({ attempt: 1 }, 'connection lost');
    log.warn({ attempt: 2 }, 'connection lost');
    mock.timers.tick(8_999);
    assert.deepEqual(lines, [{ attempt: 0 }]);
    mock.timers.tick(1);
    assert.deepEqual(lines, [{ attempt: 0 }, { attempt: 2, omitted: 2 }]);
    // Nothing left out: nothing more, however long.
    mock.timers.tick(60_000);
    assert.equal(lines.length, 2);
  } finally {
    mock.timers.reset();
  }
});

test('without a logger nothing is logged and nothing throws', () => {
  assert.doesNotThrow(() => throttledWarn(undefined).warn({}, 'connection lost'));
  assert.doesNotThrow(() => {
    const log = throttledWarn(undefined, 1);
    log.warn({}, 'connection lost');
    log.warn({}, 'connection lost');
  });
});
