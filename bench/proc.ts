/**
 * Child processes of a bench run: servers and load generators pinned to their own cores with
 * taskset, their output parsed, their memory and CPU sampled from /proc.
 */
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin/bucketmeter');
/** The node flags of bin/bucketmeter's `#!/usr/bin/env -S node …` line: the server runs as users start it. */
const BIN_NODE_FLAGS = readFileSync(BIN, 'utf8').split('\n', 1)[0]!.split(/\s+/).slice(3);

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export const TASKSET = hasTaskset();

/**
 * How a server process is pinned to its core (`--pin`). 'process': every thread of it, so the SQLite
 * writer thread, V8's GC helpers and libuv's pool share the core with the HTTP thread. 'main-thread':
 * only its main (JavaScript, HTTP) thread; its other threads may run on any core of ALL_CPUS, which on
 * a 2-core machine means beside the load generator whenever the server's core is busy.
 */
export type PinMode = 'process' | 'main-thread';

/** The cores this bench may use (its own affinity), e.g. `0-1`: where a server's unpinned threads go. */
export const ALL_CPUS = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0-1';

/**
 * Pins the main thread of process `pid` (its tid is the pid) to `cpu` and lets every other thread it
 * has now run on `otherCpus`. Threads it starts later inherit their starter's affinity: a worker the
 * main thread starts after this runs on `cpu` only.
 */
export function pinMainThreadOnly(pid: number, cpu: number, otherCpus: string): void {
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    // taskset -p without -a sets one thread's affinity.
    execFileSync('taskset', ['-p', '-c', tid === String(pid) ? String(cpu) : otherCpus, tid], { stdio: 'ignore' });
  }
}

/** How many threads of `pid` may run on which cores, e.g. `{ "0": 1, "0-1": 11 }`. */
export function threadAffinity(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const cpus = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'))?.[1] ?? '?';
      out[cpus] = (out[cpus] ?? 0) + 1;
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}
const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** The environment without anything that would change the server's settings behind the flags. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name.startsWith('BUCKETMETER_') || ['DATABASE_URL', 'PORT', 'HOST', 'LOG_LEVEL', 'NODE_OPTIONS'].includes(name)) continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

export interface Child {
  child: ChildProcess;
  pid: number;
  output(): string;
  /** Resolves the first match of `pattern` in the output (stdout and stderr). */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves how it ended and how long it took. */
  stop(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number; killed: boolean }>;
}

/**
 * Scheduling niceness of every process the bench starts (`--nice`): on a machine other people use, a
 * negative value (root only) lets the measured processes win the CPU from whatever else runs.
 */
let niceness: number | undefined;

export function setNiceness(value: number | undefined): void {
  niceness = value;
}

/** Starts `node <args>` on core `cpu` (any core when undefined or taskset is missing). */
export function spawnNode(cpu: number | undefined, args: string[], options: { env?: Record<string, string>; nodeFlags?: string[] } = {}): Child {
  let argv = [process.execPath, ...(options.nodeFlags ?? []), ...args];
  if (cpu !== undefined && TASKSET) argv = ['taskset', '-c', String(cpu), ...argv];
  if (niceness !== undefined) argv = ['nice', '-n', String(niceness), ...argv];
  const child = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, env: cleanEnv(options.env), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const waiters: { pattern: RegExp; done: (m: RegExpExecArray) => void }[] = [];
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    // The output of a long run is mostly noise; keep the head (startup) and the tail.
    if (output.length > 4_000_000) output = output.slice(0, 100_000) + '\n[...]\n' + output.slice(-1_000_000);
    for (const w of [...waiters]) {
      const m = w.pattern.exec(output);
      if (m) {
        waiters.splice(waiters.indexOf(w), 1);
        w.done(m);
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once('exit', (code, signal) => done({ code, signal })));
  let ended = false;
  void exited.then(() => (ended = true));
  return {
    child,
    pid: child.pid!,
    output: () => output,
    exited,
    waitFor(pattern, timeoutMs) {
      const now = pattern.exec(output);
      if (now) return Promise.resolve(now);
      return new Promise((done, fail) => {
        const timer = setTimeout(() => fail(new Error(`no ${pattern} within ${timeoutMs} ms; output:\n${output.slice(-4000)}`)), timeoutMs);
        waiters.push({
          pattern,
          done: (m) => {
            clearTimeout(timer);
            done(m);
          },
        });
        void exited.then(({ code, signal }) => {
          clearTimeout(timer);
          fail(new Error(`process exited (${code ?? signal}) before ${pattern}; output:\n${output.slice(-4000)}`));
        });
      });
    },
    async stop(timeoutMs = 30_000) {
      const started = Date.now();
      if (ended) return { ...(await exited), ms: 0, killed: false };
      child.kill('SIGTERM');
      let killed = false;
      const timer = setTimeout(() => {
        killed = true;
        child.kill('SIGKILL');
      }, timeoutMs);
      const result = await exited;
      clearTimeout(timer);
      return { ...result, ms: Date.now() - started, killed };
    },
  };
}

export interface BucketmeterProcess extends Child {
  url: string;
  key: string;
}

/** Starts `bin/bucketmeter serve` as users do, on an empty store, and reads the bootstrap key it prints. */
export async function startBucketmeter(options: { cpu: number | undefined; dataDir: string; databaseUrl?: string; args?: string[]; nodeFlags?: string[]; env?: Record<string, string>; key?: string }): Promise<BucketmeterProcess> {
  const args = [BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', options.dataDir, ...(options.args ?? [])];
  if (options.databaseUrl !== undefined) args.push('--database-url', options.databaseUrl);
  // --node-flags come after the bin's own, so that they can override them.
  const child = spawnNode(options.cpu, args, { env: { LOG_LEVEL: 'info', ...options.env }, nodeFlags: [...BIN_NODE_FLAGS, ...(options.nodeFlags ?? [])] });
  try {
    const listening = await child.waitFor(/"port":(\d+)[^\n]*"msg":"bucketmeter listening"/, 30_000);
    // A store that already has keys (the usage query phase loads its own) prints none.
    const key = options.key ?? (await child.waitFor(/^\s+([A-Za-z0-9]{8}\.[A-Za-z0-9+/]{48})\s*$/m, 1_000))[1]!;
    return { ...child, url: `http://127.0.0.1:${listening[1]}`, key };
  } catch (error) {
    await child.stop(5_000);
    throw error;
  }
}

/** Starts one of the baseline servers in bench/servers/. */
export async function startBaseline(cpu: number | undefined, script: string, nodeFlags: string[] = []): Promise<Child & { url: string }> {
  const child = spawnNode(cpu, [join(ROOT, 'dist/bench/servers', script)], { nodeFlags });
  try {
    const listening = await child.waitFor(/"port":(\d+)[^\n]*"msg":"bench server listening"/, 30_000);
    return { ...child, url: `http://127.0.0.1:${listening[1]}` };
  } catch (error) {
    await child.stop(5_000);
    throw error;
  }
}

/** A `BENCH {...}` line of a bench child (loadgen.ts, raw-insert.ts) with this event. */
/**
 * GET /v1/costs as a client does: a 503 BM_ERR_COST_NOT_READY (months still being priced past the
 * server's bound, the pricing going on) asked again after its Retry-After. Any other reply returned.
 */
export async function getCosts(url: string, headers: Record<string, string>): Promise<Response> {
  for (;;) {
    const response = await fetch(url, { headers });
    if (response.status !== 503) return response;
    const body = await response.text();
    if (!body.includes('"BM_ERR_COST_NOT_READY"')) return new Response(body, { status: response.status, headers: response.headers });
    await new Promise((done) => setTimeout(done, Number(response.headers.get('retry-after') ?? 10) * 1000));
  }
}

export async function benchMessage<T>(child: Child, event: string, timeoutMs: number): Promise<T> {
  const match = await child.waitFor(new RegExp(`^BENCH (\\{"event":"${event}".*)$`, 'm'), timeoutMs);
  return JSON.parse(match[1]!) as T;
}

interface MemorySample {
  /** Seconds since the sampler started. */
  t: number;
  rssMb: number;
}

/** Samples a process's resident memory (VmRSS) and its high-water mark (VmHWM) from /proc. */
export class MemorySampler {
  readonly samples: MemorySample[] = [];
  private hwmMb = 0;
  /** Date.now() when sampling began; sample times count from here. */
  readonly started = Date.now();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pid: number,
    intervalMs = 200,
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
  }

  private sample(): void {
    let status: string;
    try {
      status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    } catch {
      return; // exited
    }
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) / 1024;
    const rssMb = kb('VmRSS');
    if (!Number.isNaN(rssMb)) this.samples.push({ t: (Date.now() - this.started) / 1000, rssMb });
    this.hwmMb = Math.max(this.hwmMb, kb('VmHWM'));
    if (rssMb > this.atPeak.rssMb) this.atPeak = { rssMb, anonMb: kb('RssAnon'), fileMb: kb('RssFile'), shmemMb: kb('RssShmem') };
  }

  /** The largest RSS sample and what it was made of: anonymous (heaps, malloc), file-backed, shared. */
  atPeak = { rssMb: 0, anonMb: 0, fileMb: 0, shmemMb: 0 };

  /** Peak resident memory so far: the kernel's high-water mark, which sees peaks between samples. */
  get peakMb(): number {
    this.sample();
    return this.hwmMb;
  }

  /** Mean RSS over samples taken in [from, to) seconds after `origin` (a Date.now() value). */
  meanBetween(origin: number, from: number, to: number): number {
    const offset = (origin - this.started) / 1000;
    const picked = this.samples.filter((s) => s.t >= offset + from && s.t < offset + to).map((s) => s.rssMb);
    return picked.length === 0 ? Number.NaN : picked.reduce((a, b) => a + b, 0) / picked.length;
  }

  /** Least-squares slope of RSS over [from, to) seconds after `origin`, in MB per second: a leak stays above 0. */
  slopeBetween(origin: number, from: number, to: number): number {
    const offset = (origin - this.started) / 1000;
    const picked = this.samples.filter((s) => s.t >= offset + from && s.t < offset + to);
    const n = picked.length;
    if (n < 2) return Number.NaN;
    const mt = picked.reduce((a, s) => a + s.t, 0) / n;
    const mr = picked.reduce((a, s) => a + s.rssMb, 0) / n;
    const cov = picked.reduce((a, s) => a + (s.t - mt) * (s.rssMb - mr), 0);
    const vt = picked.reduce((a, s) => a + (s.t - mt) ** 2, 0);
    return cov / vt;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

function statCpuSeconds(path: string): number {
  try {
    const stat = readFileSync(path, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}

/** CPU time a process has used so far, in seconds (user + system, all threads), from /proc/PID/stat. */
export function cpuSeconds(pid: number): number {
  return statCpuSeconds(`/proc/${pid}/stat`);
}

/** CPU seconds so far of each thread of a process, by thread id (the main thread's id is the pid). */
export function threadCpuSeconds(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) out.set(Number(tid), statCpuSeconds(`/proc/${pid}/task/${tid}/stat`));
  } catch {
    // exited
  }
  return out;
}

/**
 * Where a process's CPU went between two threadCpuSeconds snapshots, in cores: the main thread, the
 * busiest other thread (for bucketmeter on SQLite, the writer thread) and all others (GC helpers,
 * the libuv pool).
 */
export function threadSplit(pid: number, before: Map<number, number>, after: Map<number, number>, seconds: number): { main: number; busiestOther: number; rest: number } {
  let main = 0;
  const others: number[] = [];
  for (const [tid, end] of after) {
    const used = (end - (before.get(tid) ?? 0)) / seconds;
    if (tid === pid) main = used;
    else others.push(used);
  }
  others.sort((a, b) => b - a);
  const busiestOther = others[0] ?? 0;
  return { main, busiestOther, rest: others.slice(1).reduce((a, b) => a + b, 0) };
}

/** Seconds each core has spent so far: in tasks (user, nice, system, steal), in interrupts (irq, softirq), idle. */
export interface CoreTimes {
  tasks: number;
  interrupts: number;
  idle: number;
}

/**
 * Per-core times from /proc/stat, by core number. Interrupt time is apart because on loopback the
 * kernel's network processing runs as softirq, charged to no process: at tens of thousands of
 * requests a second it is a large share of a core, and belongs to neither "ours" nor "others".
 */
export function coreTimes(): Map<number, CoreTimes> {
  const out = new Map<number, CoreTimes>();
  try {
    for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
      const m = /^cpu(\d+)\s+(.*)$/.exec(line);
      if (!m) continue;
      // user nice system idle iowait irq softirq steal
      const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = m[2]!.trim().split(/\s+/).map(Number);
      out.set(Number(m[1]), { tasks: (user + nice + system + steal) / CLK_TCK, interrupts: (irq + softirq) / CLK_TCK, idle: (idle + iowait) / CLK_TCK });
    }
  } catch {
    // not Linux
  }
  return out;
}

/** Share of each core's time spent in tasks, in interrupts, idle, between two coreTimes snapshots. */
export function coreShares(before: Map<number, CoreTimes>, after: Map<number, CoreTimes>): Record<string, CoreTimes> {
  const out: Record<string, CoreTimes> = {};
  for (const [core, end] of after) {
    const start = before.get(core);
    if (start === undefined) continue;
    const tasks = end.tasks - start.tasks;
    const interrupts = end.interrupts - start.interrupts;
    const idle = end.idle - start.idle;
    const total = tasks + interrupts + idle;
    if (total > 0) out[`cpu${core}`] = { tasks: tasks / total, interrupts: interrupts / total, idle: idle / total };
  }
  return out;
}

/** Runs a bench child's main: a failure is written with its stack, and the child exits 1. */
export function runBench(name: string, main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    process.stderr.write(`${name} bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
