/**
 * The store failing under load: the PostgreSQL connection cut (every socket through a TCP proxy
 * destroyed, new ones refused), or the SQLite disk full (a 4 MiB tmpfs). While it lasts every write
 * must be refused with 503 + Retry-After and /healthz must say 503; nothing refused may be reported
 * stored; afterwards the server must recover by itself, with nobody restarting it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runLoad } from '../../test/support/load.js';
import type { Answer, LoadResult } from '../../test/support/load.js';
import { createKey, startServer, tempDir } from '../../test/support/server.js';
import type { ServerProcess } from '../../test/support/server.js';
import { startTcpProxy, viaProxy } from '../../test/support/tcp-proxy.js';
import { Tally, report } from '../support/measure.js';
import { audit, serverOptions, sqliteIntegrity, storeArgs, storedEventIds } from '../support/stores.js';
import type { StoreTarget } from '../support/stores.js';

const TENANT = 'outage';

/** One /healthz answer: when it was asked, when it came (Date.now()), and what it was (0: no answer). */
interface HealthAnswer {
  at: number;
  answeredAt: number;
  status: number;
}

/** /healthz, asked every 100 ms. */
function pollHealth(url: string): { answers: HealthAnswer[]; stop(): Promise<void> } {
  const answers: HealthAnswer[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = Date.now();
      const status = await fetch(`${url}/healthz`).then((r) => r.status, () => 0);
      answers.push({ at: started, answeredAt: Date.now(), status });
      await sleep(100);
    }
  })();
  return {
    answers,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/** Everything sent and acknowledged over the phases, and what the server answered in each. */
class Ledger {
  readonly sent = new Set<string>();
  readonly acknowledged = new Set<string>();
  readonly phases: Record<string, { statuses: Record<string, number>; codes: Record<string, number> }> = {};

  add(phase: string, load: LoadResult): LoadResult {
    for (const id of load.sent) this.sent.add(id);
    for (const id of load.acknowledged) this.acknowledged.add(id);
    this.phases[phase] = { statuses: Object.fromEntries(load.statuses), codes: Object.fromEntries(load.codes) };
    return load;
  }
}

interface Phase {
  url: string;
  key: string;
  ledger: Ledger;
  name: string;
  /** Load stops when this resolves. */
  until: Promise<unknown>;
}

async function phase({ url, key, ledger, name, until }: Phase): Promise<LoadResult> {
  const load = await runLoad({ url, key, connections: 16, batchEvery: 4, batchSize: 20, prefix: `${TENANT}-${name}`, until });
  assert.deepEqual(load.malformed, [], `${name}: refusals are problem+json, with Retry-After`);
  return ledger.add(name, load);
}

/** Waits for the first 200 from `probe`; milliseconds it took. */
async function firstSuccess(probe: () => Promise<number>, limitMs: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < limitMs) {
    if ((await probe()) === 200) return Date.now() - started;
    await sleep(50);
  }
  return Infinity;
}

async function recovery(server: ServerProcess, key: string, since: number): Promise<{ healthMs: number; writeMs: number }> {
  const write = () =>
    fetch(`${server.url}/s3`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify({ action: 'ListBuckets', timestamp: '2024-05-01T12:00:00Z', provider: 'aws', eventId: `${TENANT}-probe-${Date.now()}-${Math.random()}` }) }).then((r) => r.status, () => 0);
  const health = () => fetch(`${server.url}/healthz`).then((r) => r.status, () => 0);
  const [writeMs, healthMs] = await Promise.all([firstSuccess(write, 30_000), firstSuccess(health, 30_000)]);
  const elapsed = Date.now() - since;
  return { healthMs: Math.min(healthMs, elapsed), writeMs: Math.min(writeMs, elapsed) };
}

async function finish(t: TestContext, name: string, target: StoreTarget, ledger: Ledger, extra: Record<string, unknown>): Promise<void> {
  // The probe writes of recovery() were acknowledged too, but are not in the ledger: leave them out.
  const stored = (await storedEventIds(target, TENANT)).filter((id) => !id.startsWith(`${TENANT}-probe-`));
  const found = audit(ledger.sent, ledger.acknowledged, stored);
  report(t, name, { ...extra, phases: ledger.phases, eventsSent: ledger.sent.size, acknowledged: ledger.acknowledged.size, stored: stored.length, storedUnacknowledged: found.storedUnacknowledged, lost: found.lost.length, doubled: found.doubled.length, unsent: found.unsent.length });
  assert.deepEqual(found.lost.slice(0, 10), [], 'acknowledged events lost');
  assert.deepEqual(found.doubled.slice(0, 10), [], 'events stored twice');
  assert.deepEqual(found.unsent.slice(0, 10), [], 'stored events that were never sent');
  assert.ok((extra.serverWarnings as number) <= 20, `the outage did not flood the log: ${String(extra.serverWarnings)} warnings`);
}

/** Health answers asked after `from` and before `to`. */
const answersBetween = (answers: HealthAnswer[], from: number, to: number) => answers.filter((a) => a.at >= from && a.at < to);

const healthBetween = (answers: HealthAnswer[], from: number, to: number) => {
  const tally = new Tally<number>();
  for (const a of answersBetween(answers, from, to)) tally.add(a.status);
  return tally;
};

/**
 * The 200 health answers that the writes cannot explain. A successful commit clears the failure that
 * /healthz reports, so a 200 is honest only after a write succeeded with no failed write since. The
 * clocks are the client's, so a 200 is explained by a success sent before the health answer came, unless
 * a failure certainly came between: sent after that success was answered, answered before the health
 * check was asked.
 */
function unexplainedHealthy(health: readonly HealthAnswer[], writes: readonly Answer[]): HealthAnswer[] {
  const successes = writes.filter((w) => w.status === 200);
  const failures = writes.filter((w) => w.status === 503 && w.code === 'BM_ERR_STORE_UNAVAILABLE');
  return health.filter((h) => {
    if (h.status !== 200) return false;
    // The latest success that may have come before the check: the one that leaves least room for a failure after it.
    const latest = successes.reduce((max, w) => (w.sentAt < h.answeredAt ? Math.max(max, w.answeredAt) : max), -Infinity);
    return latest === -Infinity || failures.some((f) => f.sentAt > latest && f.answeredAt < h.at);
  });
}

/** How long a server gets to stop gracefully at the end of a test before it is killed. */
const STOP_KILL_AFTER_MS = 10_000;

export interface PostgresOutageOptions {
  target: StoreTarget;
  cutSeconds: number;
  hangSeconds: number;
  /** Slowest answer allowed while the store hangs (the server gives up on the store after 5 s). */
  maxAnswerWhileHungMs: number;
}

export async function postgresOutageScenario(t: TestContext, options: PostgresOutageOptions): Promise<void> {
  const { target } = options;
  if (target.backend !== 'postgres') throw new Error('the connection cut needs PostgreSQL');
  const key = await createKey(TENANT, storeArgs(target));
  const database = new URL(target.url);
  const proxy = await startTcpProxy(database.hostname, Number(database.port || 5432));
  t.after(() => proxy.close());
  const server = await startServer({ args: ['--database-url', viaProxy(target.url, proxy)] });
  t.after(() => server.kill());
  const health = pollHealth(server.url);
  const ledger = new Ledger();
  const on = { url: server.url, key, ledger };
  try {
    const before = await phase({ ...on, name: 'before', until: sleep(2000) });
    assert.deepEqual([...before.statuses.keys()], [200], 'all accepted before the cut');

    proxy.cut();
    const cutAt = Date.now();
    const during = await phase({ ...on, name: 'during', until: sleep(options.cutSeconds * 1000) });
    const healthDuring = healthBetween(health.answers, cutAt, Date.now());
    // Every write begun after the cut must be refused: a 200 would be an acknowledgement without a commit.
    assert.deepEqual([...during.statuses.keys()], [503], `only 503 during the cut: ${JSON.stringify(Object.fromEntries(during.statuses))}`);
    assert.deepEqual([...healthDuring.keys()], [503], `/healthz 503 during the cut: ${JSON.stringify(healthDuring)}`);

    proxy.restore();
    const restoredAt = Date.now();
    const recovered = await recovery(server, key, restoredAt);
    const after = await phase({ ...on, name: 'after-cut', until: sleep(2000) });
    assert.deepEqual([...after.statuses.keys()], [200], 'all accepted after recovery');
    assert.ok(recovered.healthMs <= 5000 && recovered.writeMs <= 5000, `recovered within 5 s: ${JSON.stringify(recovered)}`);

    // A hang: nothing forwarded, nothing closed. Requests must not wait on the store for ever.
    proxy.hang();
    const hungAt = Date.now();
    const hung = await phase({ ...on, name: 'hung', until: sleep(options.hangSeconds * 1000) });
    const healthHung = healthBetween(health.answers, hungAt, Date.now());
    // Nothing can commit through a hung connection: a 200 would be an acknowledgement without a commit.
    assert.deepEqual([...hung.statuses.keys()], [503], `only 503 while the store hangs: ${JSON.stringify(Object.fromEntries(hung.statuses))}`);
    assert.equal(hung.networkErrors, 0, `every request answered while the store hangs (slowest wait ${hung.slowestMs} ms)`);
    assert.ok(hung.slowestMs <= options.maxAnswerWhileHungMs, `answered within ${options.maxAnswerWhileHungMs} ms while the store hangs: slowest ${hung.slowestMs} ms`);
    assert.deepEqual([...healthHung.keys()].filter((s) => s !== 503), [], `/healthz 503 while the store hangs: ${JSON.stringify(healthHung)}`);
    proxy.restore();
    const recoveredFromHang = await recovery(server, key, Date.now());
    const afterHang = await phase({ ...on, name: 'after-hang', until: sleep(2000) });
    assert.deepEqual([...afterHang.statuses.keys()], [200], 'all accepted after the hang');
    await health.stop();
    assert.ok(recoveredFromHang.healthMs <= 5000 && recoveredFromHang.writeMs <= 5000, `recovered within 5 s: ${JSON.stringify(recoveredFromHang)}`);
    assert.equal(server.child.exitCode, null, 'the server never stopped');
    // Commits that hung may complete once the network is back: stored but never acknowledged (allowed).
    await sleep(1000);
    await finish(t, 'outage/postgres', target, ledger, {
      cutSeconds: options.cutSeconds,
      healthDuringCut: healthDuring,
      recoveryFromCutMs: recovered,
      hangSeconds: options.hangSeconds,
      healthWhileHung: healthHung,
      slowestAnswerWhileHungMs: hung.slowestMs,
      recoveryFromHangMs: recoveredFromHang,
      serverWarnings: warnings(server),
    });
  } finally {
    await health.stop();
    // The proxy first: a server stopping gracefully would wait for ever on commits a hung proxy holds.
    await proxy.close();
    await server.stop(STOP_KILL_AFTER_MS);
  }
}

/** How many warn/error lines the server logged: refusals must not flood the log. */
function warnings(server: ServerProcess): number {
  return server.output().split('\n').filter((line) => /"level":(40|50|60)/.test(line)).length;
}

export interface DiskFullOptions {
  fullSeconds: number;
  /** Without a tmpfs (it needs root): fail (the full suite), or skip and say so (the short run). */
  mustRun: boolean;
}

export async function diskFullScenario(t: TestContext, options: DiskFullOptions): Promise<void> {
  const root = tempDir('bm-rel-disk-');
  const dataDir = join(root, 'tiny');
  mkdirSync(dataDir);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dataDir], { stdio: 'pipe' });
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    const why = (error as Error).message.split('\n', 1)[0];
    if (options.mustRun) throw new Error(`cannot mount a 4 MiB tmpfs, which the full reliability suite needs for its disk-full test: run it as root (${why})`);
    const reason = `cannot mount a 4 MiB tmpfs (needs root): the disk-full test was NOT run (${why})`;
    console.warn(`\n*** ${reason} ***\n`);
    t.skip(reason);
    return;
  }
  const target: StoreTarget = { backend: 'sqlite', dataDir };
  let server: ServerProcess | undefined;
  try {
    const key = await createKey(TENANT, storeArgs(target));
    // Space to free later, as an operator would: the database fills the rest.
    const ballast = join(dataDir, 'ballast');
    writeFileSync(ballast, Buffer.alloc(2 * 1024 * 1024));
    server = await startServer(serverOptions(target));
    t.after(() => server?.kill());
    const health = pollHealth(server.url);
    const ledger = new Ledger();
    const on = { url: server.url, key, ledger };
    try {
      // Fill the disk: load until writes are refused as the store being unavailable.
      let filling = 0;
      let filled: LoadResult | undefined;
      for (; filling < 30; filling++) {
        const load = await phase({ ...on, name: `filling-${filling}`, until: sleep(1000) });
        if ((load.codes.get('BM_ERR_STORE_UNAVAILABLE') ?? 0) > 0) {
          filled = load;
          break;
        }
      }
      const { bavail, bsize } = statfsSync(dataDir);
      assert.ok(filled, `the disk filled up (${bavail * bsize} bytes left)`);
      const fullAt = Date.now();
      const during = await phase({ ...on, name: 'full', until: sleep(options.fullSeconds * 1000) });
      const healthAnswers = answersBetween(health.answers, fullAt, Date.now());
      const healthDuring = healthBetween(health.answers, fullAt, Date.now());
      const refusedDuring = during.statuses.get(503) ?? 0;
      // A small write may still fit in a page freed by a rolled-back one; whatever is acknowledged is audited.
      assert.deepEqual([...during.statuses.keys()].filter((s) => s !== 200 && s !== 503), [], `only 200 or 503 while full: ${JSON.stringify(Object.fromEntries(during.statuses))}`);
      assert.ok(refusedDuring > 0, 'writes refused while the disk is full');
      assert.deepEqual([...healthDuring.keys()].filter((s) => s !== 200 && s !== 503), [], `/healthz answers 200 or 503 while the disk is full: ${JSON.stringify(healthDuring)}`);
      assert.ok((healthDuring.get(503) ?? 0) > 0, `/healthz 503 while the disk is full: ${JSON.stringify(healthDuring)}`);
      // A 200 only right after a write that succeeded, as the last commit then did.
      const unexplained = unexplainedHealthy(healthAnswers, [...filled.answers, ...during.answers]);
      assert.deepEqual(unexplained.slice(0, 5), [], `/healthz 200 while the last write failed (${unexplained.length} of ${healthAnswers.length} answers)`);

      rmSync(ballast);
      const freedAt = Date.now();
      const recovered = await recovery(server, key, freedAt);
      const after = await phase({ ...on, name: 'after', until: sleep(1000) });
      await health.stop();
      assert.ok(recovered.healthMs <= 5000 && recovered.writeMs <= 5000, `recovered within 5 s: ${JSON.stringify(recovered)}`);
      assert.ok((after.statuses.get(200) ?? 0) > 0, 'writes accepted again');
      assert.equal(server.child.exitCode, null, 'the server never stopped');
      assert.equal(sqliteIntegrity(dataDir), 'ok');
      await finish(t, 'outage/sqlite-disk-full', target, ledger, { fillingSeconds: filling + 1, fullSeconds: options.fullSeconds, healthWhileFull: healthDuring, recoveryMs: recovered, serverWarnings: warnings(server) });
    } finally {
      await health.stop();
    }
  } finally {
    try {
      await server?.stop(STOP_KILL_AFTER_MS);
    } finally {
      execFileSync('umount', ['-l', dataDir]);
      rmSync(root, { recursive: true, force: true });
    }
  }
}
