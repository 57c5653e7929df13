/**
 * Batch load for throughput tests: closed loop (a fixed number of clients, each waiting for its answer)
 * to measure capacity, open loop (requests at a fixed rate, whatever the answers) to overload. Event ids
 * are `<tag>-<request>-<index>`, so that what was acknowledged is a set of request numbers, not of
 * millions of strings.
 */
import type { Pool } from 'undici';
import { minimalWireEvent } from '../../test/support/events.js';
import { Tally } from './measure.js';

export interface Outcome {
  /** Request number. */
  n: number;
  status: number;
  /** Milliseconds from sending to the whole answer. */
  ms: number;
  /** When the answer was complete (performance.now()). */
  at: number;
  retryAfter: boolean;
  code: string | undefined;
}

export class BatchLoad {
  private next = 0;
  private readonly head: string;
  readonly sent = new Set<number>();
  readonly acknowledged = new Set<number>();
  readonly statuses = new Tally<number>();
  readonly codes = new Tally<string>();
  /** Answers that were not as every answer must be (a 200 that did not accept the whole batch, a body that is not JSON): the first few. */
  readonly failures: string[] = [];
  networkErrors = 0;

  constructor(
    private readonly pool: Pool,
    private readonly key: string,
    readonly tag: string,
    readonly batchSize: number,
  ) {
    // An event's JSON up to its eventId value, which each request fills in.
    this.head = JSON.stringify({ ...minimalWireEvent('GetObject'), eventId: '' }).slice(0, -3);
  }

  /** `<tag>-<n>-<i>` → n, or undefined for an id this load did not make. */
  requestOf(eventId: string): number | undefined {
    const match = /^(.+)-(\d+)-(\d+)$/.exec(eventId);
    return match?.[1] === this.tag && Number(match[3]) < this.batchSize ? Number(match[2]) : undefined;
  }

  /**
   * Sends one batch; resolves when it is answered (undefined: failed on the network). Never rejects:
   * an answer that is not as it must be is kept in `failures` for the test to assert on.
   */
  async send(): Promise<Outcome | undefined> {
    const n = this.next++;
    const events: string[] = [];
    for (let i = 0; i < this.batchSize; i++) events.push(`${this.head}"${this.tag}-${n}-${i}"}`);
    this.sent.add(n);
    const started = performance.now();
    let status: number;
    let text: string;
    let retryAfter: boolean;
    try {
      const reply = await this.pool.request({ method: 'POST', path: '/s3/batch', headers: { 'content-type': 'application/json', 'x-api-key': this.key }, body: `[${events.join(',')}]` });
      text = await reply.body.text();
      status = reply.statusCode;
      retryAfter = reply.headers['retry-after'] !== undefined;
    } catch {
      this.networkErrors++;
      return undefined;
    }
    const at = performance.now();
    this.statuses.add(status);
    let code: string | undefined;
    try {
      if (status === 200) {
        const body = JSON.parse(text) as { accepted: number };
        if (body.accepted === this.batchSize) this.acknowledged.add(n);
        else this.fail(`batch ${n} not fully accepted: ${text.slice(0, 300)}`);
      } else {
        code = String((JSON.parse(text) as { code?: unknown }).code);
        this.codes.add(code);
      }
    } catch {
      this.fail(`batch ${n}: ${status} with a body that is not JSON: ${text.slice(0, 300)}`);
    }
    return { n, status, ms: at - started, at, retryAfter, code };
  }

  private fail(why: string): void {
    if (this.failures.length < 20) this.failures.push(why);
  }

  /** `clients` clients, each sending its next batch when the last is answered, until `stop()` is true. */
  async closedLoop(clients: number, stop: () => boolean, onOutcome: (o: Outcome) => void = () => {}): Promise<void> {
    const client = async () => {
      while (!stop()) {
        const outcome = await this.send();
        if (outcome) onOutcome(outcome);
      }
    };
    await Promise.all(Array.from({ length: clients }, client));
  }

  /**
   * Batches at `perSecond` for `seconds`, each sent on time whatever the answers, except that no more
   * than `maxInFlight` wait at once: those beyond are counted, not sent. Resolves when the last is
   * sent; `answered` resolves when every one sent has its answer.
   */
  async openLoop(perSecond: number, seconds: number, maxInFlight: number, onOutcome: (o: Outcome) => void): Promise<{ offered: number; notSent: number; answered: Promise<void> }> {
    let inFlight = 0;
    let offered = 0;
    let notSent = 0;
    const pending = new Set<Promise<void>>();
    const started = performance.now();
    await new Promise<void>((done) => {
      const tick = setInterval(() => {
        const elapsed = (performance.now() - started) / 1000;
        const due = Math.floor(Math.min(elapsed, seconds) * perSecond) - offered;
        for (let i = 0; i < due; i++) {
          offered++;
          if (inFlight >= maxInFlight) {
            notSent++;
            continue;
          }
          inFlight++;
          const p: Promise<void> = this.send().then((outcome) => {
            inFlight--;
            pending.delete(p);
            if (outcome) onOutcome(outcome);
          });
          pending.add(p);
        }
        if (elapsed >= seconds) {
          clearInterval(tick);
          done();
        }
      }, 2);
    });
    return { offered, notSent, answered: Promise.all(pending).then(() => undefined) };
  }
}
