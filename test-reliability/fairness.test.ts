/** Fairness: a noisy tenant beside a quiet one (see scenarios/fairness.ts). */
import { after, describe, it } from 'node:test';
import { fairnessScenario } from './scenarios/fairness.js';
import { dropTargets, sqliteTarget } from './support/stores.js';

after(dropTargets);

describe('fairness', () => {
  it("sqlite: colliding keys, heavy reads and a quarantine flood from one tenant keep another's p99 within 2× of its own", (t) =>
    fairnessScenario(t, {
      target: sqliteTarget(),
      noisyHistory: 300_000,
      rounds: 4,
      windowSeconds: 5,
      quietEveryMs: 20,
      noisyReaders: 4,
      noisyBatchEveryMs: 2500,
      maxP99Ratio: 2,
    }));
});
