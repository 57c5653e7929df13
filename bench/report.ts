/**
 * Turns the runs of a bench into medians, target checks and the tables printed, saved under
 * bench/results/ and written into docs/BENCHMARKS.md.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, release, totalmem } from 'node:os';
import { basename } from 'node:path';
import type { LoadResult } from './loadgen.js';
import type { OverviewTiming } from './overview.js';
import { NOISY_CORES, TARGETS } from './phases.js';
import type { Phase } from './phases.js';
import type { PinMode } from './proc.js';
import type { ProfileSummary } from './profile.js';
import type { RawInsertResult, UsageDrain } from './raw-insert.js';
import { median } from './stats.js';

export interface Settings {
  mode: 'quick' | 'full';
  runs: number;
  warmupSec: number;
  durationSec: number;
  sustainedSec: number;
  flatWindowSec: number;
  rawRows: number;
  rawTxRows: number;
  /** Sizes of the usage query phase's store (events over 30 days). */
  usageEvents: number[];
  /** Timed answers per usage query (after two warmups). */
  usageQueryRuns: number;
  /** SQLite usage query phase: loaded stores kept here (a directory per size) and reused by later runs. */
  usageDir?: string;
  /** false: the usage query phase times no /v1/costs query (the dashboard's overview still asks for costs). */
  usageCosts: boolean;
  /** False: the usage-query phases leave out the dashboard's overview (chromium). */
  usageOverview: boolean;
  /** False (--only-overview): the usage-query phases time no query, only the dashboard's overview. */
  usageQueries: boolean;
  /** --overview-reloads: each overview run leaves at its first numbers, its panels' reads abandoned. */
  overviewReloads: boolean;
  /** Live versions of the inventory query phase. */
  inventoryVersions: number;
  /** Longest wait for other processes to quieten down before a phase starts. */
  quietWaitSec: number;
  databaseUrl?: string;
  /** Niceness the measured processes ran with. */
  nice?: number;
  /** What of each server process was pinned to the server core (bench/proc.ts PinMode). */
  pin: PinMode;
  only?: string[];
  cpuProf?: string;
  /** Extra Node/V8 flags the bucketmeter server ran with (experiments; a run with them is not the reference). */
  nodeFlags?: string[];
  docs: boolean;
}

export interface DiskResult {
  bytes: number;
  files: Record<string, number>;
  /** Events in the database after the server stopped. */
  events: number;
  /** Events the load generator saw acknowledged (stored is at least this, plus requests cut at the end). */
  acknowledged: number;
  bytesPerEvent: number;
  /** Tables and indexes with their bytes (SQLite dbstat; PostgreSQL tables with their indexes). */
  objects: { name: string; bytes: number }[];
}

export interface RunRecord {
  phase: string;
  run: number;
  ok: boolean;
  error?: string;
  load?: LoadResult;
  raw?: RawInsertResult;
  /** Task CPU of other processes while the raw/store child ran, in cores (PostgreSQL included for its phases). */
  rawOtherCpuCores?: number;
  /** How long the phase waited for a quiet machine, and how busy it was when it started. */
  quiet?: { waitedSec: number; busyCores: number };
  server?: {
    peakRssMb: number;
    /** The largest VmRSS sample, split into anonymous, file-backed and shared memory. */
    largestSample: { rssMb: number; anonMb: number; fileMb: number; shmemMb: number };
    cpuCores: number;
    /** The server's CPU by thread, in cores (see proc.ts threadSplit). */
    threads: { main: number; busiestOther: number; rest: number };
    /** CPU used meanwhile by processes other than the server, the load generator and the orchestrator. */
    otherCpuCores: number;
    /** Per core (`cpu0`, ...): share of the window in tasks, in interrupts (softirq: loopback networking), idle. */
    cores: Record<string, { tasks: number; interrupts: number; idle: number }>;
    /** After the run: how many of the server's threads could run on which cores (e.g. `{ "0": 12 }`). */
    affinity: Record<string, number>;
    rss?: { firstWindowMb: number; lastWindowMb: number; growth: number; windowSec: number; secondHalfMbPerMin: number };
    rssSeries?: [number, number][];
    stop?: { code: number | null; signal: string | null; ms: number; killed: boolean };
  };
  disk?: DiskResult;
  /** Ingest phases with usage on: the derived data's drain after the last 2xx, the rollups and the inventory when on (store phases: in raw). */
  drain?: UsageDrain;
  /** The usage query phase: per store size, the load, rollup storage and each query's p50. */
  usageQuery?: UsageQueryResult[];
  /** The inventory query phase: its load and each query's p50. */
  inventoryQuery?: InventoryQueryResult;
  profiles?: { thread: string; file: string; summary: ProfileSummary }[];
}

export interface UsageQueryResult {
  events: number;
  /** null: a store kept by --usage-dir whose load time is not known. */
  loadSeconds: number | null;
  diskBytesPerEvent: number;
  rollupBytesPerEvent: number;
  rollupObjects: { name: string; bytes: number }[];
  /** rowsPerSec: exports (the FOCUS CSV), rows over the p50 time; refused: the status and code of a refusal. */
  /** firstPageP50Ms, laterPageP50Ms: answers of several pages, the first page and the others (each page a request). */
  /** computedFirstPageP50Ms: the first page on a server that keeps no answer (--usage-kept-rows 0), so computed every time; p50Ms and the pages' figures are then asked again, from the kept answer. */
  queries: { name: string; p50Ms: number; rows: number; pages: number; rowsPerSec?: number; refused?: string; firstPageP50Ms?: number; laterPageP50Ms?: number; computedFirstPageP50Ms?: number }[];
  /** The dashboard's overview in chromium; absent where chromium is not installed. */
  overview?: OverviewTiming;
}

export interface InventoryQueryResult {
  versions: number;
  loadSeconds: number;
  queries: { name: string; p50Ms: number; targetMs: number }[];
}

export interface StreamSummary {
  name: string;
  reqPerSec: number;
  eventsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

export interface PhaseSummary {
  id: string;
  title: string;
  okRuns: number;
  failedRuns: number;
  /** Counts for the peak RSS target. */
  rssTarget: boolean;
  streams: StreamSummary[];
  rawRowsPerSec?: number;
  rawBytesPerRow?: number;
  peakRssMb?: number;
  /** Highest peak of any run. */
  peakRssMaxMb?: number;
  serverCores?: number;
  /** Of serverCores: the main (HTTP) thread, and the busiest other thread (SQLite: the writer). */
  mainThreadCores?: number;
  otherThreadCores?: number;
  loadgenCores?: number;
  otherCores?: number;
  /** Share of the server's core left idle: near 0 means the server (with its network softirq) was CPU-bound. */
  serverCoreIdle?: number;
  rssFirstMb?: number;
  rssLastMb?: number;
  rssGrowth?: number;
  rssSecondHalfMbPerMin?: number;
  diskBytesPerEvent?: number;
  diskEvents?: number;
  /** Usage on: seconds from the last 2xx until the rollups (and the inventory, when on) had caught up; server CPU µs per event stored, while ingesting and during that drain. */
  drainSeconds?: number;
  cpuUsPerEvent?: number;
  drainCpuUsPerEvent?: number;
  /** Measured seconds over measured seconds + drain: a rate times this is the rate including the drain. */
  drainFactor?: number;
  /** Lowest (stored - acknowledged) over the runs: negative would mean an acknowledged event was lost. */
  diskMinSurplus?: number;
}

export interface TargetCheck {
  target: string;
  required: string;
  measured: string;
  ratio?: number;
  /** null: not measured in this run. */
  met: boolean | null;
}

export interface BenchResults {
  version: 1;
  startedAt: string;
  finishedAt: string;
  settings: Settings;
  machine: Machine;
  pinned: boolean;
  phases: { id: string; title: string; target: string; streams: { name: string; path: string; connections: number; batch: number }[] }[];
  runs: RunRecord[];
  summary: { phases: Record<string, PhaseSummary>; targets: TargetCheck[] };
}

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGb: number;
  node: string;
  kernel: string;
  disk: string;
  commit: string;
}

function run(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  } catch {
    return '';
  }
}

/** The machine the numbers belong to, and where the databases were written. */
export function describeMachine(dataRoot: string): Machine {
  const df = run('df', ['-PT', dataRoot]).split('\n')[1]?.split(/\s+/) ?? [];
  const device = df[0] ?? '?';
  const block = basename(device).replace(/p?\d+$/, '');
  const read = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8').trim() : '');
  const rotational = read(`/sys/block/${block}/queue/rotational`);
  const model = read(`/sys/block/${block}/device/model`);
  const size = Number(read(`/sys/block/${block}/size`)) * 512;
  const diskParts = [
    `${df[1] ?? '?'} on ${device}`,
    model ? model : block.startsWith('vd') ? 'virtio block device' : '',
    size > 0 ? `${Math.round(size / 1e9)} GB` : '',
    rotational === '0' ? 'non-rotational' : rotational === '1' ? 'rotational' : '',
  ].filter((p) => p !== '');
  const dirty = run('git', ['status', '--porcelain']) !== '';
  return {
    cpus: availableParallelism(),
    cpuModel: cpus()[0]?.model.trim() ?? '?',
    memoryGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    kernel: release(),
    disk: diskParts.join(', '),
    commit: `${run('git', ['rev-parse', '--short', 'HEAD']) || '?'}${dirty ? ' + uncommitted changes' : ''}`,
  };
}

// NaN (no sample) arrives from the children's JSON as null.
const defined = (values: (number | null | undefined)[]) => values.filter((v): v is number => typeof v === 'number' && !Number.isNaN(v));
const medianOf = (values: (number | null | undefined)[]) => {
  const list = defined(values);
  return list.length === 0 ? undefined : median(list);
};

export function summarize(phases: Phase[], records: RunRecord[]): BenchResults['summary'] {
  const out: Record<string, PhaseSummary> = {};
  for (const phase of phases) {
    const ok = records.filter((r) => r.phase === phase.id && r.ok);
    const summary: PhaseSummary = {
      id: phase.id,
      title: phase.title,
      okRuns: ok.length,
      rssTarget: phase.rssTarget === true,
      failedRuns: records.filter((r) => r.phase === phase.id && !r.ok).length,
      streams: phase.streams.map((spec, i) => {
        const streams = ok.map((r) => r.load?.streams[i]);
        return {
          name: spec.name,
          reqPerSec: medianOf(streams.map((s) => s?.reqPerSec)) ?? Number.NaN,
          eventsPerSec: medianOf(streams.map((s) => s?.eventsPerSec)) ?? Number.NaN,
          p50Ms: medianOf(streams.map((s) => s?.latencyMs.p50)) ?? Number.NaN,
          p99Ms: medianOf(streams.map((s) => s?.latencyMs.p99)) ?? Number.NaN,
          non2xx: streams.reduce((sum, s) => sum + (s?.non2xx ?? 0), 0),
          errors: streams.reduce((sum, s) => sum + (s?.errors ?? 0), 0),
        };
      }),
    };
    const set = <K extends keyof PhaseSummary>(key: K, value: PhaseSummary[K] | undefined) => {
      if (value !== undefined) summary[key] = value;
    };
    set('rawRowsPerSec', medianOf(ok.map((r) => r.raw?.rowsPerSec)));
    set('rawBytesPerRow', medianOf(ok.map((r) => r.raw?.bytesPerRow)));
    set('peakRssMb', medianOf(ok.map((r) => r.server?.peakRssMb)));
    const peaks = defined(ok.map((r) => r.server?.peakRssMb));
    if (peaks.length > 0) summary.peakRssMaxMb = Math.max(...peaks);
    set('serverCores', medianOf(ok.map((r) => r.server?.cpuCores)));
    set('mainThreadCores', medianOf(ok.map((r) => r.server?.threads.main)));
    set('otherThreadCores', medianOf(ok.map((r) => r.server?.threads.busiestOther)));
    set('loadgenCores', medianOf(ok.map((r) => r.load?.cpuCores)));
    set('otherCores', medianOf(ok.map((r) => r.server?.otherCpuCores ?? r.rawOtherCpuCores)));
    set('serverCoreIdle', medianOf(ok.map((r) => r.server?.cores.cpu0?.idle)));
    set('rssFirstMb', medianOf(ok.map((r) => r.server?.rss?.firstWindowMb)));
    set('rssLastMb', medianOf(ok.map((r) => r.server?.rss?.lastWindowMb)));
    set('rssGrowth', medianOf(ok.map((r) => r.server?.rss?.growth)));
    set('rssSecondHalfMbPerMin', medianOf(ok.map((r) => r.server?.rss?.secondHalfMbPerMin)));
    set('diskBytesPerEvent', medianOf(ok.map((r) => r.disk?.bytesPerEvent)));
    set('diskEvents', medianOf(ok.map((r) => r.disk?.events)));
    const drains = ok.map((r) => r.drain ?? r.raw?.usage);
    set('drainSeconds', medianOf(drains.map((d) => d?.seconds)));
    set('cpuUsPerEvent', medianOf(drains.map((d) => d?.cpuUsPerEvent)));
    set('drainCpuUsPerEvent', medianOf(drains.map((d) => d?.drainCpuUsPerEvent)));
    set('drainFactor', medianOf(ok.map((r) => {
      const d = r.drain ?? r.raw?.usage;
      const seconds = r.raw?.seconds ?? r.load?.streams[0]?.durationSec;
      return d === undefined || seconds === undefined ? undefined : seconds / (seconds + d.seconds);
    })));
    const surplus = defined(ok.map((r) => (r.disk ? r.disk.events - r.disk.acknowledged : undefined)));
    if (surplus.length > 0) summary.diskMinSurplus = Math.min(...surplus);
    out[phase.id] = summary;
  }
  return { phases: out, targets: checkTargets(out) };
}

const num = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n) ? '–' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ratioText = (r: number | undefined) => (r === undefined || Number.isNaN(r) ? '–' : `${r.toFixed(2)}×`);

function checkTargets(p: Record<string, PhaseSummary>): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const single = p.single?.streams[0];
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || Number.isNaN(a) || Number.isNaN(b) || b === 0 ? undefined : a / b);
  const vs = (target: string, required: number, measured: number | undefined, baseline: number | undefined, unit: string, baselineName: string) => {
    const r = ratio(measured, baseline);
    checks.push({
      target,
      required: `≥ ${required}× ${baselineName}`,
      measured: `${num(measured)} vs ${num(baseline)} ${unit}`,
      ...(r === undefined ? {} : { ratio: r }),
      met: r === undefined ? null : r >= required,
    });
  };
  vs('single-event ingest vs validate-only', TARGETS.singleVsValidate, single?.reqPerSec, p.validate?.streams[0]?.reqPerSec, 'req/s', 'validate-only Fastify');
  vs('single-event ingest vs node:http hello', TARGETS.singleVsHello, single?.reqPerSec, p.hello?.streams[0]?.reqPerSec, 'req/s', 'node:http hello');
  checks.push({
    target: 'single-event ingest p99 at 64 connections',
    required: `≤ ${TARGETS.singleP99Ms} ms`,
    measured: `${num(single?.p99Ms, 2)} ms`,
    met: single === undefined || Number.isNaN(single.p99Ms) ? null : single.p99Ms <= TARGETS.singleP99Ms,
  });
  vs('batch 1,000, SQLite, vs raw INSERT', TARGETS.batchSqliteVsRaw, p.batch1000?.streams[0]?.eventsPerSec, p['raw-sqlite']?.rawRowsPerSec, 'events/s', 'raw INSERT');
  const b1000 = p.batch1000?.streams[0]?.eventsPerSec;
  checks.push({
    target: 'batch 1,000, SQLite, absolute',
    required: `≥ ${num(TARGETS.batchSqliteEventsPerSec)} events/s`,
    measured: `${num(b1000)} events/s`,
    met: b1000 === undefined || Number.isNaN(b1000) ? null : b1000 >= TARGETS.batchSqliteEventsPerSec,
  });
  vs('batch 1,000, PostgreSQL, vs raw COPY', TARGETS.batchPostgresVsCopy, p['pg-batch1000']?.streams[0]?.eventsPerSec, p['raw-postgres']?.rawRowsPerSec, 'events/s', 'raw COPY');
  const bucketmeterPhases = Object.values(p).filter((s) => s.peakRssMaxMb !== undefined && s.rssTarget);
  const peak = bucketmeterPhases.length === 0 ? undefined : Math.max(...bucketmeterPhases.map((s) => s.peakRssMaxMb!));
  const peakPhase = bucketmeterPhases.find((s) => s.peakRssMaxMb === peak)?.id;
  checks.push({
    target: 'peak RSS under any load',
    required: `≤ ${TARGETS.peakRssMb} MB`,
    measured: peak === undefined ? '–' : `${num(peak)} MB (${peakPhase}, highest run)`,
    met: peak === undefined ? null : peak <= TARGETS.peakRssMb,
  });
  for (const id of ['sustained', 'pg-sustained']) {
    const s = p[id];
    if (s === undefined && id === 'pg-sustained') continue;
    checks.push({
      target: `RSS flat over the sustained run${id === 'pg-sustained' ? ' (PostgreSQL)' : ''}`,
      required: `last window ≤ first + ${TARGETS.rssFlatGrowth * 100}%`,
      measured: s?.rssGrowth === undefined ? '–' : `${num(s.rssFirstMb)} → ${num(s.rssLastMb)} MB (${s.rssGrowth >= 0 ? '+' : ''}${(s.rssGrowth * 100).toFixed(1)}%; second half ${num(s.rssSecondHalfMbPerMin, 1)} MB/min)`,
      met: s?.rssGrowth === undefined ? null : s.rssGrowth <= TARGETS.rssFlatGrowth,
    });
  }
  const usagePairs: [string, string, string, 'rawRowsPerSec' | 'reqPerSec' | 'eventsPerSec'][] = [
    ['SQLite single, usage alone (inventory off),', 'single-noinventory', 'single-nousage', 'reqPerSec'],
    ['SQLite batch 1,000, usage alone (inventory off),', 'batch1000-noinventory', 'batch1000-nousage', 'eventsPerSec'],
    ['SQLite store.commit()', 'store-sqlite', 'store-sqlite-nousage', 'rawRowsPerSec'],
    ['SQLite single', 'single', 'single-nousage', 'reqPerSec'],
    ['SQLite batch 1,000', 'batch1000', 'batch1000-nousage', 'eventsPerSec'],
    ['PostgreSQL single, usage alone (inventory off),', 'pg-single-noinventory', 'pg-single-nousage', 'reqPerSec'],
    ['PostgreSQL batch 1,000, usage alone (inventory off),', 'pg-batch1000-noinventory', 'pg-batch1000-nousage', 'eventsPerSec'],
    ['PostgreSQL store.commit()', 'store-postgres', 'store-postgres-nousage', 'rawRowsPerSec'],
    ['PostgreSQL single', 'pg-single', 'pg-single-nousage', 'reqPerSec'],
    ['PostgreSQL batch 1,000', 'pg-batch1000', 'pg-batch1000-nousage', 'eventsPerSec'],
  ];
  for (const [name, withId, withoutId, field] of usagePairs) {
    const rate = (id: string) => (field === 'rawRowsPerSec' ? p[id]?.rawRowsPerSec : p[id]?.streams[0]?.[field]);
    if (p[withoutId] === undefined || p[withId] === undefined) continue;
    const unit = field === 'reqPerSec' ? 'req/s' : 'events/s';
    const w = p[withId];
    vs(`${name} with usage rollups vs without`, TARGETS.usageIngestRatio, rate(withId), rate(withoutId), unit, 'rollups off');
    // The rollups are folded after commit: the same rate counted until they had caught up.
    const drained = w?.drainFactor === undefined ? undefined : rate(withId)! * w.drainFactor;
    vs(`${name} with usage rollups vs without, drain included (${num(w?.drainSeconds, 1)} s; CPU ${num(w?.cpuUsPerEvent, 1)} + ${num(w?.drainCpuUsPerEvent, 1)} µs/event against ${num(p[withoutId]?.cpuUsPerEvent, 1)})`, TARGETS.usageIngestRatio, drained, rate(withoutId), unit, 'rollups off');
  }
  const disk = p.sustained?.diskBytesPerEvent;
  checks.push({
    target: 'disk per event, reference mix, SQLite',
    required: `≤ ${TARGETS.diskBytesPerEvent} bytes`,
    measured: `${num(disk, 1)} bytes`,
    met: disk === undefined ? null : disk <= TARGETS.diskBytesPerEvent,
  });
  return checks;
}

const ms = (n: number | undefined) => num(n, n !== undefined && n < 10 ? 2 : 1);

/** The report: figures, ratios, targets, memory and disk, as Markdown (printed and put in the docs). */
export function renderReport(results: BenchResults): string {
  const p = results.summary.phases;
  const { settings } = results;
  const lines: string[] = [];
  const runsText = settings.runs === 1 ? '1 run' : `median of ${settings.runs} runs`;
  if (settings.nodeFlags) lines.push(`**Server run with extra Node flags: ${settings.nodeFlags.join(' ')}**`, '');
  lines.push(`Mode: ${settings.mode} (${runsText}; ${settings.warmupSec} s warmup + ${settings.durationSec} s measured per phase; sustained ${settings.sustainedSec} s; raw inserts ${num(settings.rawRows)} rows).`);
  lines.push('');
  lines.push('| phase | load | req/s | events/s | p50 ms | p99 ms | peak RSS MB | server CPU (main + 2nd thread) | server core idle | loadgen CPU | other procs CPU |');
  lines.push('|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const phase of results.phases) {
    const s = p[phase.id];
    if (s === undefined) continue;
    const failed = s.failedRuns > 0 ? ` (${s.failedRuns} failed run${s.failedRuns > 1 ? 's' : ''})` : '';
    if (s.rawRowsPerSec !== undefined || phase.streams.length === 0) {
      lines.push(`| ${phase.id}${failed} | ${phase.title} | | ${num(s.rawRowsPerSec)} ${phase.target === 'store' ? 'events' : 'rows'}/s | | | | | | | ${num(s.otherCores, 2)} |`);
      continue;
    }
    phase.streams.forEach((stream, i) => {
      const st = s.streams[i]!;
      const load = `${stream.path} ${stream.batch === 0 ? 'single' : `×${stream.batch}`}, ${stream.connections} conn`;
      const trouble = st.non2xx + st.errors > 0 ? ` ⚠ ${st.non2xx} non-2xx, ${st.errors} errors` : '';
      const first = i === 0;
      lines.push(
        `| ${first ? phase.id + failed : ''} | ${load}${trouble} | ${num(st.reqPerSec)} | ${num(st.eventsPerSec)} | ${ms(st.p50Ms)} | ${ms(st.p99Ms)} | ${first ? num(s.peakRssMb) : ''} | ${first ? `${num(s.serverCores, 2)} (${num(s.mainThreadCores, 2)} + ${num(s.otherThreadCores, 2)})` : ''} | ${first && s.serverCoreIdle !== undefined ? `${Math.round(s.serverCoreIdle * 100)}%` : ''} | ${first ? num(s.loadgenCores, 2) : ''} | ${first ? num(s.otherCores, 2) : ''} |`,
      );
    });
  }
  const noisy = results.phases.filter((phase) => !phase.id.startsWith('pg-') && !phase.id.endsWith('-postgres') && (p[phase.id]?.otherCores ?? 0) > NOISY_CORES).map((phase) => phase.id);
  if (noisy.length > 0) lines.push('', `⚠ Other processes used more than ${NOISY_CORES} of a core during ${noisy.join(', ')} (median): those figures are depressed by something else running.`);
  lines.push('');
  lines.push('| target | required | measured | ratio | met |');
  lines.push('|---|---|---|--:|:-:|');
  for (const t of results.summary.targets) {
    lines.push(`| ${t.target} | ${t.required} | ${t.measured} | ${ratioText(t.ratio)} | ${t.met === null ? 'not measured' : t.met ? 'yes' : '**no**'} |`);
  }
  const ratios: string[] = [];
  const r = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : a / b);
  const b100 = p.batch100?.streams[0]?.eventsPerSec;
  if (b100 !== undefined) ratios.push(`batch 100 (SQLite) = ${ratioText(r(b100, p['raw-sqlite']?.rawRowsPerSec))} raw INSERT`);
  const storeSqlite = p['store-sqlite']?.rawRowsPerSec;
  if (storeSqlite !== undefined) {
    ratios.push(`SQLite store.commit() without HTTP = ${ratioText(r(storeSqlite, p['raw-sqlite']?.rawRowsPerSec))} raw INSERT, and batch 1,000 over HTTP = ${ratioText(r(p.batch1000?.streams[0]?.eventsPerSec, storeSqlite))} of it`);
  }
  const storePg = p['store-postgres']?.rawRowsPerSec;
  if (storePg !== undefined) {
    ratios.push(`PostgreSQL store.commit() without HTTP = ${ratioText(r(storePg, p['raw-postgres']?.rawRowsPerSec))} raw COPY, and batch 1,000 over HTTP = ${ratioText(r(p['pg-batch1000']?.streams[0]?.eventsPerSec, storePg))} of it`);
  }
  const vb = p['validate-batch1000']?.streams[0]?.eventsPerSec;
  if (vb !== undefined) ratios.push(`batch 1,000 (SQLite) = ${ratioText(r(p.batch1000?.streams[0]?.eventsPerSec, vb))} validate-only batch 1,000`);
  const pg100 = p['pg-batch100']?.streams[0]?.eventsPerSec;
  if (pg100 !== undefined) ratios.push(`batch 100 (PostgreSQL) = ${ratioText(r(pg100, p['raw-postgres']?.rawRowsPerSec))} raw COPY`);
  const pgSingle = p['pg-single']?.streams[0]?.reqPerSec;
  if (pgSingle !== undefined) ratios.push(`single (PostgreSQL) = ${ratioText(r(pgSingle, p.validate?.streams[0]?.reqPerSec))} validate-only, p99 ${ms(p['pg-single']?.streams[0]?.p99Ms)} ms`);
  if (ratios.length > 0) lines.push('', `Other ratios: ${ratios.join('; ')}.`);

  const diskLines: string[] = [];
  for (const id of ['sustained', 'pg-sustained', 'batch1000', 'pg-batch1000']) {
    const s = p[id];
    if (s?.diskBytesPerEvent === undefined) continue;
    const sample = results.runs.find((x) => x.phase === id && x.ok && x.disk);
    const breakdown = sample?.disk
      ? sample.disk.objects
          .filter((o) => o.bytes / sample.disk!.events >= 0.5)
          .map((o) => `${o.name} ${(o.bytes / sample.disk!.events).toFixed(1)}`)
          .join(', ')
      : '';
    const surplus = s.diskMinSurplus !== undefined && s.diskMinSurplus < 0 ? ` ⚠ ${-s.diskMinSurplus} acknowledged events missing` : '';
    diskLines.push(`- ${id}: ${num(s.diskBytesPerEvent, 1)} bytes/event over ${num(s.diskEvents)} stored events${surplus}${breakdown ? ` (bytes/event by table/index, run ${sample!.run}: ${breakdown})` : ''}`);
  }
  const raw = p['raw-sqlite']?.rawBytesPerRow;
  if (raw !== undefined) diskLines.push(`- raw INSERT database (same rows, inserted in seq order): ${num(raw, 1)} bytes/row`);
  if (diskLines.length > 0) {
    lines.push('', 'Disk per stored event, indexes and dictionary included (SQLite: the database files after SIGTERM, WAL checkpointed; PostgreSQL: pg_total_relation_size of the run\'s tables):', ...diskLines);
  }
  for (const run of results.runs.filter((x) => x.ok && x.usageQuery !== undefined)) {
    for (const size of run.usageQuery!) {
      lines.push(
        '',
        `${run.phase} (run ${run.run}): ${num(size.events)} events over 30 days, ${size.loadSeconds === null ? 'a store kept from an earlier load (--usage-dir)' : `loaded by store.commit() in ${num(size.loadSeconds, 1)} s`}; rollups ${num(size.rollupBytesPerEvent, 1)} of ${num(size.diskBytesPerEvent, 1)} bytes/event on disk (${size.rollupObjects.map((o) => `${o.name} ${(o.bytes / size.events).toFixed(1)}`).join(', ')}).`,
        '',
        "Asked again: the same query repeated on one server, answered from the answer it keeps while the tenant's events are unchanged. Computed: page 1 on a server that keeps none (--usage-kept-rows 0), computed every time (the whole answer when it has one page; a first answer's later pages are sliced from it).",
        '',
        '| query (30 days) | p50 ms, whole answer asked again | page 1 | a later page | p50 ms, page 1 computed | rows | pages | rows/s |',
        '|---|--:|--:|--:|--:|--:|--:|--:|',
        ...size.queries.map(
          (q) =>
            `| ${q.name} | ${q.refused === undefined ? ms(q.p50Ms) : `refused: ${q.refused}`} | ${q.firstPageP50Ms === undefined ? '' : ms(q.firstPageP50Ms)} | ${q.laterPageP50Ms === undefined ? '' : ms(q.laterPageP50Ms)} | ${q.computedFirstPageP50Ms === undefined ? '' : ms(q.computedFirstPageP50Ms)} | ${num(q.rows)} | ${q.pages} | ${q.rowsPerSec === undefined ? '' : num(q.rowsPerSec)} |`,
        ),
        '',
        size.overview === undefined
          ? `Dashboard overview: not measured (${settings.usageOverview ? 'no chromium at /usr/bin/chromium' : '--no-overview'}).`
          : `Dashboard overview of the 30 days in chromium (p50 of ${size.overview.runs} runs after a warmup): first numbers painted in ${ms(size.overview.firstNumbersP50Ms)} ms (every run, the warmup first: ${size.overview.firstNumbersMs.map(ms).join(', ')} ms; target ≤ 1,000 ms at 10M events); ${size.overview.reloads ? 'each run left at its first numbers, its panels still being read (--overview-reloads), and the next came at once' : `every panel answered in ${size.overview.allPanelsP50Ms === undefined ? 'more than 300 s' : `${ms(size.overview.allPanelsP50Ms)} ms`}`}.`,
      );
    }
  }
  for (const run of results.runs.filter((x) => x.ok && x.inventoryQuery !== undefined)) {
    const inv = run.inventoryQuery!;
    lines.push(
      '',
      `${run.phase} (run ${run.run}): ${num(inv.versions)} live versions over 30 days, loaded by store.commit() with the inventory applied after each 10,000-event unit in ${num(inv.loadSeconds, 1)} s.`,
      '',
      '| query | p50 ms | target ms | met |',
      '|---|--:|--:|---|',
      ...inv.queries.map((q) => `| ${q.name} | ${ms(q.p50Ms)} | ${q.targetMs} | ${q.p50Ms <= q.targetMs ? 'yes' : '**no**'} |`),
    );
  }
  const mixed = p.mixed;
  if (mixed?.peakRssMb !== undefined) {
    const [one, many] = mixed.streams;
    lines.push('', `Mixed load (not a target load): single ×64 and batch 1,000 ×8 at once: singles ${num(one?.reqPerSec)} req/s p50 ${ms(one?.p50Ms)} ms p99 ${ms(one?.p99Ms)} ms; batches ${num(many?.eventsPerSec)} events/s; peak RSS ${num(mixed.peakRssMb)} MB.`);
  }

  const m = results.machine;
  lines.push('', `Machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGb} GB RAM, Node ${m.node}, Linux ${m.kernel}, disk: ${m.disk}. ${settings.pin === 'main-thread' ? 'Server main thread on core 0 (its other threads, the SQLite writer among them, on any core)' : 'Server (every thread, the SQLite writer among them) on core 0'}, load generator on core 1${results.pinned ? '' : ' (NOT pinned: taskset missing)'}${settings.nice !== undefined ? `, both at nice ${settings.nice}` : ''}. Commit ${m.commit}, ${results.startedAt}.`);
  return lines.join('\n');
}

const START = '<!-- bench:results:start -->';
const END = '<!-- bench:results:end -->';

/** Replaces the generated section of docs/BENCHMARKS.md (between its markers) with this report. */
export function updateDocs(path: string, results: BenchResults, report: string): void {
  const text = readFileSync(path, 'utf8');
  const from = text.indexOf(START);
  const to = text.indexOf(END);
  if (from < 0 || to < from) throw new Error(`${path} lacks the ${START} ... ${END} markers`);
  const body = `${START}\n<!-- generated by npm run bench (${results.startedAt}); edit bench/report.ts, not this section -->\n\n${report}\n\n${END}`;
  writeFileSync(path, text.slice(0, from) + body + text.slice(to + END.length));
}
