/**
 * "Overview interactive" on the usage query phase's store: the dashboard's overview of the bench's 30
 * days opened in Debian's chromium (playwright-core), as a user opens it (every panel's requests go
 * out at once, costs included). Timed by the page's own mark when its first numbers are painted, and
 * until every panel has its answer. The first run is warmup: it also waits out whatever the server
 * still had to fold or catch up after the load, which a running server does in the background.
 */
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { median } from './stats.js';

const CHROMIUM = '/usr/bin/chromium';
/** A panel may wait on pricing a month of millions of events: past this, "every panel" is given as not reached. */
const PANELS_TIMEOUT_MS = 300_000;
/** The warmup's first numbers may wait on folding and catching up everything the loader stored (tens of millions of rows). */
const WARMUP_TIMEOUT_MS = 3_600_000;

export interface OverviewTiming {
  runs: number;
  /** Each run left at its first numbers (a reload), its panels' reads still under way: no panel timing. */
  reloads: boolean;
  firstNumbersP50Ms: number;
  /** Every run's first numbers, the warmup's (a first visit to an idle server) first; Infinity: not painted in time. */
  firstNumbersMs: number[];
  /** Undefined when a run's panels were not all answered within PANELS_TIMEOUT_MS. */
  allPanelsP50Ms?: number;
}

/**
 * Undefined where chromium is not installed (the bench then says so). `reloads`: each run leaves the
 * page once its first numbers are painted, as a user who reloads or comes back at once: the next
 * visit comes while the earlier one's panels are still being read (issue 17).
 */
export async function timeOverview(server: { url: string; key: string }, fromDay: string, toDay: string, runs: number, reloads = false): Promise<OverviewTiming | undefined> {
  if (!existsSync(CHROMIUM)) return undefined;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const first: number[] = [];
  const every: number[] = [];
  const all: number[] = [];
  let allReached = !reloads;
  try {
    for (let run = 0; run < runs + 1; run++) {
      // A context of its own per run, as a new visitor. (At 10M events this did not stop later runs
      // waiting: their first request queued on the server behind earlier runs' panel reads; see
      // docs/BENCHMARKS.md, "10M events".)
      const context = await browser.newContext();
      await context.addInitScript((k) => sessionStorage.setItem('bucketmeter.apiKey', k), server.key);
      const page = await context.newPage();
      try {
        await page.goto(`${server.url}/ui/#/overview?from=${fromDay}&to=${toDay}&tz=UTC&g=day`);
        const timeout = run === 0 ? WARMUP_TIMEOUT_MS : PANELS_TIMEOUT_MS;
        const numbers = await page
          .waitForFunction(() => performance.getEntriesByName('bm-overview-numbers').length > 0, undefined, { timeout, polling: 20 })
          .then(() => true)
          .catch(() => false);
        if (!numbers) {
          // Not painted in time: given as such, rather than losing the runs already timed.
          every.push(Number.POSITIVE_INFINITY);
          if (run > 0) first.push(Number.POSITIVE_INFINITY);
          allReached = false;
          continue;
        }
        const painted = await page.evaluate(() => performance.getEntriesByName('bm-overview-numbers')[0]!.startTime);
        every.push(painted);
        // Once a run's panels were not all answered in time (the warmup's included), later runs
        // time their first numbers only.
        const ready = allReached
          ? await page
              // Ready, and no panel still waiting for its months to be priced (it asks again by itself).
              .waitForFunction(() => (document.querySelector('main')?.dataset.state === 'ready' && document.querySelector('main .notice.pending') === null ? performance.now() : false), undefined, {
                timeout: PANELS_TIMEOUT_MS,
                polling: 20,
              })
              .then((handle) => handle.jsonValue() as Promise<number>)
              .catch(() => undefined)
          : undefined;
        if (ready === undefined) allReached = false;
        if (run === 0) continue;
        first.push(painted);
        if (ready !== undefined) all.push(ready);
      } finally {
        await context.close();
      }
    }
  } finally {
    await browser.close();
  }
  return { runs, reloads, firstNumbersP50Ms: median(first), firstNumbersMs: every, ...(allReached ? { allPanelsP50Ms: median(all) } : {}) };
}
