/** What the reliability tests measure about a server process and its answers, and how they report it. */
import { readFileSync } from 'node:fs';
import type { TestContext } from 'node:test';

/** Resident set size of a process, in bytes (0 once it is gone). */
function rssBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export interface RssSampler {
  /** Highest RSS seen so far, in bytes. */
  readonly peak: number;
  /** Stops sampling; returns the peak. */
  stop(): number;
}

export function sampleRss(pid: number, everyMs = 100): RssSampler {
  let peak = rssBytes(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), everyMs);
  // A test that fails before stop() must not be kept alive by its sampler.
  timer.unref();
  return {
    get peak() {
      return peak;
    },
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, rssBytes(pid));
      return peak;
    },
  };
}

export const MiB = 1024 * 1024;

/** The value at quantile q (0..1) of unsorted numbers. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Counts by key, for status and code tallies. */
export class Tally<K> extends Map<K, number> {
  add(key: K, n = 1): void {
    this.set(key, (this.get(key) ?? 0) + n);
  }

  toJSON(): Record<string, number> {
    return Object.fromEntries([...this].map(([k, v]) => [String(k), v]));
  }
}

/**
 * Prints a test's figures as one `# FIGURES {...}` line in the runner's output, which is what
 * docs/RELIABILITY.md quotes.
 */
export function report(t: TestContext, name: string, figures: Record<string, unknown>): void {
  const line = JSON.stringify({ test: name, ...figures }, (_key, value: unknown) => (typeof value === 'number' && !Number.isInteger(value) ? Math.round(value * 10) / 10 : value));
  t.diagnostic(`FIGURES ${line}`);
}
