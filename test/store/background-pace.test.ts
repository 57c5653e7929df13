/** The background inventory catch-up's pace (store/background-pace.ts), on a clock the test moves. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BUSY_CATCH_UP_MS, BUSY_FACTOR, BackgroundPace, IDLE_MS } from '../../src/store/background-pace.js';

/** A pace on a test clock, whose catch-up takes `took` ms of it; counts the catch-ups run. */
function paced(took: number) {
  const clock = { now: 0, committedAt: Number.NEGATIVE_INFINITY, runs: 0 };
  const pace = new BackgroundPace(
    () => clock.committedAt,
    () => clock.now,
  );
  const call = () =>
    pace.run(async () => {
      clock.runs++;
      clock.now += took;
    });
  return { clock, call };
}

describe('background inventory catch-up pace', () => {
  it('runs at every call while this process commits nothing', async () => {
    const { clock, call } = paced(400);
    for (let i = 0; i < 5; i++) {
      await call();
      clock.now += 250;
    }
    assert.equal(clock.runs, 5);
  });

  it('while committing, waits ten times as long as the last catch-up took, and at least a second', async () => {
    const { clock, call } = paced(400);
    const tick = async () => {
      clock.committedAt = clock.now - 1;
      await call();
      clock.now += 250;
    };
    await tick();
    assert.equal(clock.runs, 1);
    // The first ended at 400: the next is due BUSY_FACTOR × 400 ms later.
    const due = 400 + BUSY_FACTOR * 400;
    while (clock.now < due) await tick();
    assert.equal(clock.runs, 1, 'no catch-up before its wait is over');
    await tick();
    assert.equal(clock.runs, 2);

    const quick = paced(10);
    quick.clock.committedAt = 0;
    await quick.call();
    quick.clock.now = 10 + BUSY_CATCH_UP_MS - 1;
    quick.clock.committedAt = quick.clock.now;
    await quick.call();
    assert.equal(quick.clock.runs, 1, 'a short catch-up still waits a second');
    quick.clock.now = 10 + BUSY_CATCH_UP_MS;
    quick.clock.committedAt = quick.clock.now;
    await quick.call();
    assert.equal(quick.clock.runs, 2);
  });

  it('runs at once when commits have paused, whatever the wait', async () => {
    const { clock, call } = paced(400);
    clock.committedAt = 0;
    await call();
    clock.now += 250;
    clock.committedAt = clock.now - IDLE_MS;
    await call();
    assert.equal(clock.runs, 2);
  });

  it('counts a failed catch-up as run: the wait follows it too', async () => {
    const clock = { now: 0 };
    const pace = new BackgroundPace(
      () => clock.now,
      () => clock.now,
    );
    await assert.rejects(
      pace.run(async () => {
        clock.now += 300;
        throw new Error('store down');
      }),
      /store down/,
    );
    let ran = false;
    clock.now += 250;
    await pace.run(async () => {
      ran = true;
    });
    assert.equal(ran, false);
  });
});
