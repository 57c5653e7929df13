/** The time a read may take, checked by the read between its bounded steps. */
import { ReadTimeoutError } from '../types.js';

/** Now, on the clock of the deadlines the main thread sends (performance.timeOrigin is per thread). */
export const epochNow = (): number => performance.timeOrigin + performance.now();

export class ReadBudget {
  constructor(
    /** Epoch milliseconds. */
    readonly deadline: number,
    private readonly budgetMs: number,
  ) {}

  check(): void {
    if (epochNow() > this.deadline) throw new ReadTimeoutError(`the read took more than its budget of ${this.budgetMs} ms`);
  }
}
