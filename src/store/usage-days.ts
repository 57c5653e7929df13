/** Collects reconcile figures, query by query, into one UsageDayCheck per day (both backends). */
import { SHAPES } from '../usage/shapes.js';
import type { UsageDayCheck } from './types.js';

const zero = () => [0n, 0n, 0n, 0n];

export class DayChecks {
  readonly #days = new Map<number, UsageDayCheck>();

  at(day: number | bigint | string): UsageDayCheck {
    const key = Number(day);
    let check = this.#days.get(key);
    if (check === undefined) {
      check = {
        day: key,
        receipts: { received: 0n, stored: 0n, duplicates: 0n, rejected: 0n },
        storedByArrival: 0n,
        events: zero(),
        rollups: Object.fromEntries(SHAPES.map((shape) => [shape.name, zero()])),
      };
      this.#days.set(key, check);
    }
    return check;
  }

  /**
   * Events of the day stored but not folded yet, read in the same snapshot as the rest: added to every
   * shape as their fold will add them, so a check never reports how far folding has got.
   */
  unfolded(day: number | bigint | string, measures: bigint[]): void {
    for (const sums of Object.values(this.at(day).rollups)) {
      measures.forEach((m, i) => {
        sums[i]! += m;
      });
    }
  }

  list(): UsageDayCheck[] {
    return [...this.#days.values()].sort((a, b) => a.day - b.day);
  }
}
