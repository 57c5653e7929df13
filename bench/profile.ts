/**
 * Reads a V8 .cpuprofile (node --cpu-prof) and summarizes where the time went: top functions by self
 * time, and self time by area (bucketmeter's own modules, each dependency, Node internals, GC, idle).
 * Used by `run.ts --cpu-prof <phase>`, and on its own: `node dist/bench/profile.js FILE.cpuprofile`.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds on the system's monotonic clock, the one process.hrtime() reads. */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileEntry {
  name: string;
  selfMs: number;
  share: number;
}

export interface ProfileSummary {
  /** Sampled time in the window, idle included. */
  totalMs: number;
  /** Sampled time that was not idle; shares are of this. */
  busyMs: number;
  functions: ProfileEntry[];
  areas: ProfileEntry[];
}

function area(url: string, name: string): string {
  if (name === '(garbage collector)') return 'GC';
  if (name === '(idle)') return 'idle';
  if (name === '(program)') return 'native (program)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const own = /\/dist\/(src\/[^/]+)/.exec(url);
  if (own) return `bucketmeter ${own[1]}`;
  if (url.startsWith('node:')) return url.replace(/^node:internal\/([^/]+).*$/, 'node:$1');
  return url === '' ? 'native' : url;
}

/**
 * `window` (microseconds, monotonic clock) keeps only the samples taken in it, e.g. the measured part
 * of a bench phase, leaving out startup (module loading, schema compilation) and shutdown.
 */
export function summarizeProfile(path: string, window?: { fromUs: number; toUs: number }, top = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (window && (at < window.fromUs || at > window.toUs)) continue;
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
  }
  const functions = new Map<string, number>();
  const areas = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const name = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
    const where = area(url, functionName);
    areas.set(where, (areas.get(where) ?? 0) + us);
    total += us;
    if (functionName === '(idle)') idle += us;
  }
  const busy = total - idle;
  const entries = (map: Map<string, number>, limit: number) =>
    [...map]
      .filter(([name]) => !name.startsWith('(idle)') && name !== 'idle')
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, us]) => ({ name, selfMs: us / 1000, share: us / busy }));
  return { totalMs: total / 1000, busyMs: busy / 1000, functions: entries(functions, top), areas: entries(areas, 15) };
}

export function formatProfile(summary: ProfileSummary): string {
  const line = (e: ProfileEntry) => `  ${(e.share * 100).toFixed(1).padStart(5)}%  ${e.selfMs.toFixed(0).padStart(7)} ms  ${e.name}`;
  return [`${summary.busyMs.toFixed(0)} ms busy of ${summary.totalMs.toFixed(0)} ms sampled (shares are of busy time)`, 'self time by area:', ...summary.areas.map(line), 'top functions by self time:', ...summary.functions.map(line)].join('\n');
}

if (process.argv[1]?.endsWith('/profile.js') && process.argv[2] !== undefined) {
  process.stdout.write(formatProfile(summarizeProfile(process.argv[2], undefined, Number(process.argv[3] ?? 25))) + '\n');
}
