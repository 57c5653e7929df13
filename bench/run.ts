/**
 * `npm run bench`: measures bucketmeter against its baselines and its targets, one phase after the
 * other, each phase repeated (rounds interleave the phases, so slow drift of the machine spreads over
 * all of them), and reports medians. Server and load generator run as separate processes pinned to
 * different cores (taskset; by default only the server's main thread stays pinned, see
 * proc.ts PinMode); this process only orchestrates and samples /proc.
 *
 *   npm run bench -- [--quick] [--runs N] [--database-url URL] [--only PHASE|GROUP,...] [--cpu-prof PHASE]
 *                    [--node-flags="--max-semi-space-size=32 ..."]   (V8/Node flags for every server, baselines too)
 *                    [--nice=-10]   (niceness of the measured processes, for a machine others use)
 *                    [--pin=main-thread|process]   (what of a server is pinned to core 0, default main-thread: see proc.ts PinMode)
 *
 * PostgreSQL phases run when --database-url or BENCH_DATABASE_URL is given: each run creates a schema of
 * its own in that database (CREATE SCHEMA rights needed), points the server at it through the URL's
 * search_path, and drops it afterwards; with --usage-dir the usage query phase's schema is
 * bm_bench_usage_<events>, kept like the SQLite store for the next run and for cost-query.js.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { Client } from 'pg';
import type { LoadResult, LoadSpec } from './loadgen.js';
import { NOISY_CORES, phases, STREAMS } from './phases.js';
import type { Phase } from './phases.js';
import { ALL_CPUS, coreShares, coreTimes, cpuSeconds, MemorySampler, pinMainThreadOnly, threadAffinity, threadCpuSeconds, threadSplit, ROOT, benchMessage, getCosts, setNiceness, spawnNode, startBaseline, startBucketmeter, TASKSET } from './proc.js';
import type { Child, CoreTimes, PinMode } from './proc.js';
import { timeOverview } from './overview.js';
import type { OverviewTiming } from './overview.js';
import { formatProfile, summarizeProfile } from './profile.js';
import type { RawInsertResult, RawInsertSpec } from './raw-insert.js';
import { median } from './stats.js';
import type { UsageLoadResult, UsageLoadSpec } from './usage-query.js';
import type { InventoryLoadResult, InventoryLoadSpec } from './inventory-load.js';
import { describeMachine, renderReport, summarize, updateDocs } from './report.js';
import type { BenchResults, DiskResult, RunRecord, Settings, UsageQueryResult } from './report.js';
import { MAX_ROWS } from '../src/usage/params.js';

const SERVER_CPU = 0;
/** Browser runs per dataset, after one warmup: each opens the whole overview. */
const OVERVIEW_RUNS = 5;
const LOAD_CPU = 1;

function readSettings(): Settings {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      runs: { type: 'string' },
      'database-url': { type: 'string' },
      only: { type: 'string', multiple: true },
      'cpu-prof': { type: 'string' },
      'node-flags': { type: 'string' },
      nice: { type: 'string' },
      pin: { type: 'string', default: 'main-thread' },
      'no-docs': { type: 'boolean', default: false },
      'usage-events': { type: 'string' },
      'usage-dir': { type: 'string' },
      'no-costs': { type: 'boolean', default: false },
      'no-overview': { type: 'boolean', default: false },
      'only-overview': { type: 'boolean', default: false },
      'overview-reloads': { type: 'boolean', default: false },
    },
  });
  const quick = values.quick === true;
  const runs = Number(values.runs ?? (quick ? 1 : 3));
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs: expected a positive integer, got ${values.runs}`);
  const nice = values.nice === undefined ? undefined : Number(values.nice);
  if (nice !== undefined && (!Number.isInteger(nice) || nice < -20 || nice > 19)) throw new Error(`--nice: expected an integer -20..19, got ${values.nice}`);
  if (values.pin !== 'process' && values.pin !== 'main-thread') throw new Error(`--pin: expected process or main-thread, got ${values.pin}`);
  const pin: PinMode = values.pin;
  const databaseUrl = values['database-url'] ?? process.env.BENCH_DATABASE_URL;
  const usageEvents = values['usage-events']?.split(',').map(Number);
  if (usageEvents?.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--usage-events: expected positive integers separated by commas, got ${values['usage-events']}`);
  const only = values.only?.flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
  return {
    mode: quick ? 'quick' : 'full',
    runs,
    warmupSec: quick ? 1 : 3,
    durationSec: quick ? 3 : 10,
    sustainedSec: quick ? 15 : 60,
    flatWindowSec: quick ? 5 : 10,
    rawRows: quick ? 50_000 : 300_000,
    usageEvents: usageEvents ?? (quick ? [200_000] : [1_000_000, 10_000_000]),
    usageQueryRuns: quick ? 5 : 20,
    ...(values['usage-dir'] ? { usageDir: values['usage-dir'] } : {}),
    usageCosts: !values['no-costs'],
    usageOverview: !values['no-overview'],
    usageQueries: !values['only-overview'],
    overviewReloads: values['overview-reloads'] === true,
    inventoryVersions: quick ? 100_000 : 1_000_000,
    rawTxRows: 1000,
    // Quick runs are sanity checks with a time budget: they start at once.
    quietWaitSec: quick ? 0 : 60,
    pin,
    ...(databaseUrl ? { databaseUrl } : {}),
    ...(nice !== undefined ? { nice } : {}),
    ...(only && only.length > 0 ? { only } : {}),
    ...(values['cpu-prof'] ? { cpuProf: values['cpu-prof'] } : {}),
    ...(values['node-flags'] ? { nodeFlags: values['node-flags'].split(/\s+/).filter((f) => f !== '') } : {}),
    docs: !quick && !values['no-docs'] && only === undefined && values.runs === undefined && values['cpu-prof'] === undefined && values['node-flags'] === undefined,
  };
}

const cpu = (core: number) => (TASKSET ? core : undefined);

/** Task CPU of everything on the machine but this process over `ms`, in cores. */
async function busyCores(ms: number): Promise<number> {
  const before = coreTimes();
  const self = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const used = process.cpuUsage(self);
  const tasks = Object.values(coreShares(before, coreTimes())).reduce((sum, c) => sum + c.tasks, 0);
  return Math.max(0, tasks - (used.user + used.system) / 1e3 / ms);
}

/**
 * Waits (up to `maxSec`) until other processes leave the machine nearly idle, so that a phase does
 * not start while, say, a test suite runs. Returns the seconds waited and the load it started with.
 */
async function waitForQuiet(maxSec: number): Promise<{ waitedSec: number; busyCores: number }> {
  const started = Date.now();
  for (;;) {
    const busy = await busyCores(1000);
    const waitedSec = (Date.now() - started) / 1000;
    if (busy <= NOISY_CORES || waitedSec >= maxSec) return { waitedSec, busyCores: busy };
  }
}

function dirBytes(dir: string): { bytes: number; files: Record<string, number> } {
  const files: Record<string, number> = {};
  let bytes = 0;
  for (const name of readdirSync(dir)) {
    const size = statSync(join(dir, name)).size;
    files[name] = size;
    bytes += size;
  }
  return { bytes, files };
}

/** Bytes of the stopped server's database files, and the events in them (file opened read-only). */
function sqliteDisk(dir: string, acknowledged: number): DiskResult {
  const { bytes, files } = dirBytes(dir);
  const db = new Database(join(dir, 'bucketmeter.db'), { readonly: true, fileMustExist: true });
  try {
    const events = (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
    const objects = db.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC').all() as { name: string; bytes: number }[];
    return { bytes, files, events, acknowledged, bytesPerEvent: bytes / events, objects };
  } finally {
    db.close();
  }
}

/** A PostgreSQL schema of its own for one run, and the URL that selects it. */
class PgSchema {
  readonly url: string;

  constructor(
    private readonly baseUrl: string,
    readonly name = `bm_bench_${process.pid}_${randomBytes(3).toString('hex')}`,
  ) {
    const url = new URL(baseUrl);
    url.searchParams.set('options', `-c search_path=${this.name}`);
    this.url = url.toString();
  }

  private async withClient<T>(run: (client: Client) => Promise<T>): Promise<T> {
    const client = new Client({ connectionString: this.baseUrl });
    await client.connect();
    try {
      return await run(client);
    } finally {
      await client.end();
    }
  }

  create(): Promise<void> {
    return this.withClient(async (c) => void (await c.query(`CREATE SCHEMA ${this.name}`)));
  }

  drop(): Promise<void> {
    return this.withClient(async (c) => void (await c.query(`DROP SCHEMA IF EXISTS ${this.name} CASCADE`)));
  }

  /**
   * Table statistics after a bulk load, as autovacuum gathers them within a minute on a default
   * server; done here only where the server has autovacuum off (this bench machine's has). Without
   * them the planner guesses one row per table: a 1M-version bucket's first page of /v1/objects took
   * 108 ms instead of 6 (a sort instead of the key index's order).
   */
  async analyze(): Promise<void> {
    const autovacuum = await this.withClient(async (c) => (await c.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0]?.autovacuum);
    if (autovacuum === 'on') return;
    const client = new Client({ connectionString: this.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>(`SELECT c.relname AS name FROM pg_class c WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'r'`, [this.name]);
      for (const { name } of rows) await client.query(`ANALYZE ${this.name}.${name}`);
    } finally {
      await client.end();
    }
  }

  disk(acknowledged: number): Promise<DiskResult> {
    return this.withClient(async (c) => {
      const { rows } = await c.query<{ name: string; bytes: string }>(
        `SELECT c.relname AS name, pg_total_relation_size(c.oid)::bigint AS bytes FROM pg_class c
         WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'r' ORDER BY 2 DESC`,
        [this.name],
      );
      const count = await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.name}.events`);
      const events = Number(count.rows[0]?.n ?? 0);
      const objects = rows.map((r) => ({ name: r.name, bytes: Number(r.bytes) }));
      const bytes = objects.reduce((sum, o) => sum + o.bytes, 0);
      return { bytes, files: {}, events, acknowledged, bytesPerEvent: bytes / events, objects };
    });
  }
}

/**
 * Seconds from the last 2xx until the derived data caught up: the usage rollups, and the object
 * inventory when it is on (its backlog is work the window's rate does not show, as the fold's is): their
 * gauges, polled every 50 ms, read 0.
 */
async function derivedDrain(url: string, inventory: boolean): Promise<number> {
  const started = performance.now();
  const gauges = inventory ? ['bucketmeter_usage_pending_events', 'bucketmeter_inventory_pending'] : ['bucketmeter_usage_pending_events'];
  for (;;) {
    const text = await (await fetch(`${url}/metrics`)).text();
    const pending = gauges.map((name) => {
      const value = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1];
      if (value === undefined) throw new Error(`the server has no ${name} gauge`);
      return Number(value);
    });
    if (pending.every((n) => n === 0)) return (performance.now() - started) / 1000;
    if (performance.now() - started > 600_000) throw new Error(`derived data still behind after 600 s (${gauges.map((g, i) => `${g} ${pending[i]}`).join(', ')})`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

async function runRaw(settings: Settings, phase: Phase, record: RunRecord): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bucketmeter-bench-raw-'));
  const schema = phase.backend === 'postgres' ? new PgSchema(settings.databaseUrl!) : undefined;
  try {
    await schema?.create();
    const spec: RawInsertSpec = {
      backend: phase.backend!,
      mode: phase.target === 'store' ? 'store' : 'raw',
      usage: phase.noUsage !== true,
      ...(schema ? { url: schema.url } : { dir }),
      rows: settings.rawRows,
      txRows: settings.rawTxRows,
      seed: STREAMS.batch1000.seed,
      batch: STREAMS.batch1000.batch,
      pool: STREAMS.batch1000.pool,
      now: Math.floor(Date.now() / 1000),
      tag: randomBytes(4).toString('hex'),
      // The child unpins its other threads itself, once its store (and so the writer thread) is open.
      ...(settings.pin === 'main-thread' && TASKSET ? { pinMainThread: { cpu: SERVER_CPU, otherCpus: ALL_CPUS } } : {}),
    };
    const child = spawnNode(cpu(SERVER_CPU), [join(ROOT, 'dist/bench/raw-insert.js'), JSON.stringify(spec)]);
    try {
      // The whole child's life (event generation included): enough to see whether others were busy.
      const coresBefore = coreTimes();
      const started = Date.now();
      record.raw = (await benchMessage<{ result: RawInsertResult }>(child, 'result', 600_000)).result;
      const seconds = (Date.now() - started) / 1000;
      const tasks = Object.values(coreShares(coresBefore, coreTimes())).reduce((sum, c) => sum + c.tasks, 0);
      record.rawOtherCpuCores = Math.max(0, tasks - cpuSeconds(child.pid) / seconds);
    } finally {
      await child.stop(10_000);
    }
  } finally {
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The four queries of the issue, then three with stored bytes; `hot` is the hottest customer of the mix. */
const USAGE_QUERIES = (from: string, to: string, hot: string) => [
  { name: 'day, groupBy customerId', query: `from=${from}&to=${to}&granularity=day&groupBy=customerId` },
  { name: 'none, groupBy customerId,featureId,action', query: `from=${from}&to=${to}&groupBy=customerId,featureId,action` },
  { name: 'day, groupBy clientId, one hot customer', query: `from=${from}&to=${to}&granularity=day&groupBy=clientId&customerId=${hot}` },
  { name: 'hour, no groupBy', query: `from=${from}&to=${to}&granularity=hour` },
  // Answers of several pages (issue 13): a page past the first is timed apart from the first. Up to
  // 1M events: past that the first one's answer outgrows what the server keeps for a tenant (half of
  // its 1,000,000 rows), so every one of its hundreds of pages is computed again (a 10M run went on
  // for a quarter of an hour).
  { name: 'day, groupBy customerId,featureId,action, 20,000 a page', query: `from=${from}&to=${to}&granularity=day&groupBy=customerId,featureId,action&limit=20000`, upToEvents: 1_000_000 },
  { name: 'day, groupBy customerId,clientId, one hot customer, 5,000 a page', query: `from=${from}&to=${to}&granularity=day&groupBy=customerId,clientId&customerId=${hot}&limit=5000`, upToEvents: 1_000_000 },
  // With the object inventory's stored-bytes measures (issues 14 and 17): the overview's totals, a chart, a table.
  { name: 'none, no groupBy, storage', query: `from=${from}&to=${to}&storage=true` },
  { name: 'day, groupBy provider, storage', query: `from=${from}&to=${to}&granularity=day&groupBy=provider&storage=true` },
  { name: 'none, groupBy customerId, storage', query: `from=${from}&to=${to}&groupBy=customerId&storage=true` },
];

/**
 * Loads 30 days of the reference mix through the store (a child), starts the server on it, and
 * times each query's whole answer (every page, read to the end) as a client receives it.
 */
async function runUsageQuery(settings: Settings, phase: Phase, record: RunRecord): Promise<void> {
  record.usageQuery = [];
  for (const events of settings.usageEvents) {
    // A kept PostgreSQL store is a schema named by its size; its load.json is in the kept directory.
    const kept = settings.usageDir !== undefined ? join(settings.usageDir, `${phase.backend}-${events}`) : undefined;
    const schema = phase.backend === 'postgres' ? new PgSchema(settings.databaseUrl!, ...(kept === undefined ? [] : [`bm_bench_usage_${events}`])) : undefined;
    const dir = kept ?? mkdtempSync(join(tmpdir(), 'bucketmeter-bench-usage-'));
    const loaded = kept === undefined ? undefined : join(kept, 'load.json');
    try {
      let load: UsageLoadResult & { now: number };
      if (loaded !== undefined && existsSync(loaded)) {
        load = JSON.parse(readFileSync(loaded, 'utf8')) as UsageLoadResult & { now: number };
      } else {
        // A kept directory (or schema) without its load.json holds a load that did not finish.
        if (kept !== undefined) rmSync(dir, { recursive: true, force: true });
        if (kept !== undefined) await schema?.drop();
        await schema?.create();
        mkdirSync(dir, { recursive: true });
        const now = Math.floor(Date.now() / 86_400_000) * 86400;
        const spec: UsageLoadSpec = { backend: phase.backend!, ...(schema ? { url: schema.url } : { dir }), events, days: 30, now };
        const loader = spawnNode(cpu(SERVER_CPU), [join(ROOT, 'dist/bench/usage-query.js'), JSON.stringify(spec)]);
        try {
          // Three hours: 10M events into PostgreSQL on a machine shared with other work took more than one.
          load = { ...(await benchMessage<{ result: UsageLoadResult }>(loader, 'result', 10_800_000)).result, now };
        } finally {
          await loader.stop(10_000);
        }
        await schema?.analyze();
        if (loaded !== undefined) writeFileSync(loaded, JSON.stringify(load));
      }
      const now = load.now;
      const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');
      const asked = settings.usageQueries ? USAGE_QUERIES(iso(now - 30 * 86400), iso(now), load.hotCustomer).filter((q) => events <= (q.upToEvents ?? Number.POSITIVE_INFINITY)) : [];
      // First with no answer kept (--usage-kept-rows 0): what computing an answer's first page costs
      // (the whole answer when it has one page); then as served, where every run after the first is
      // answered from the kept answer. Both are reported, so that the repeated answer's time is never
      // taken for the computation's. Only page 1 is computed: with nothing kept, each later page
      // computes the whole answer again (25 times for the 20,000-row pages at 1M events), which is not
      // how a first answer is served (its later pages are sliced from it).
      const computedServer = await startBucketmeter({ cpu: cpu(SERVER_CPU), dataDir: dir, ...(schema ? { databaseUrl: schema.url } : {}), key: load.key, args: ['--usage-kept-rows', '0'] });
      let computed: UsageQueryResult['queries'];
      try {
        computed = await timeUsageQueries(computedServer, asked, settings.usageQueryRuns, true);
      } finally {
        await computedServer.stop(60_000);
      }
      const server = await startBucketmeter({ cpu: cpu(SERVER_CPU), dataDir: dir, ...(schema ? { databaseUrl: schema.url } : {}), key: load.key });
      const queries: UsageQueryResult['queries'] = [];
      let overview: OverviewTiming | undefined;
      try {
        for (const [i, q] of (await timeUsageQueries(server, asked, settings.usageQueryRuns)).entries()) {
          const c = computed[i]!;
          if (c.rows !== Math.min(q.rows, pageRows(asked[i]!.query))) throw new Error(`${q.name}: page 1 has ${c.rows} rows computed, ${q.rows} in all from the kept answers`);
          queries.push({ ...q, computedFirstPageP50Ms: c.p50Ms });
        }
        const day = (s: number) => iso(s).slice(0, 10);
        if (settings.usageOverview) overview = await timeOverview(server, day(now - 30 * 86400), day(now - 86400), OVERVIEW_RUNS, settings.overviewReloads);
        if (settings.usageCosts && settings.usageQueries) queries.push(...(await timeCosts(server, iso(now - 30 * 86400), iso(now), settings.usageQueryRuns)));
      } finally {
        await server.stop(60_000);
      }
      const disk = schema ? await schema.disk(events) : sqliteDisk(dir, events);
      const rollupBytes = disk.objects.filter((o) => o.name.startsWith('usage_')).reduce((sum, o) => sum + o.bytes, 0);
      record.usageQuery.push({ events, loadSeconds: load.seconds, diskBytesPerEvent: disk.bytesPerEvent, rollupBytesPerEvent: rollupBytes / events, rollupObjects: disk.objects.filter((o) => o.name.startsWith('usage_')), queries, ...(overview ? { overview } : {}) });
    } finally {
      if (kept === undefined) await schema?.drop();
      if (kept === undefined) rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** The rows of a page of `query`: its limit, else the API's default. */
const pageRows = (query: string): number => Number(new URLSearchParams(query).get('limit') ?? MAX_ROWS);

/**
 * Each query's whole answer (every page, read to the end; `firstPageOnly`: its first page) as a
 * client receives it: p50 of `runs` after two warmups.
 */
async function timeUsageQueries(server: { url: string; key: string }, asked: { name: string; query: string }[], runs: number, firstPageOnly = false): Promise<UsageQueryResult['queries']> {
  const out: UsageQueryResult['queries'] = [];
  for (const q of asked) {
    const times: number[] = [];
    const firstPages: number[] = [];
    const laterPages: number[] = [];
    let rows = 0;
    let pages = 0;
    for (let run = 0; run < runs + 2; run++) {
      const started = process.hrtime.bigint();
      rows = 0;
      pages = 0;
      let cursor: string | null = null;
      do {
        const pageStarted = process.hrtime.bigint();
        const response = await fetch(`${server.url}/v1/usage?${q.query}${cursor === null ? '' : `&cursor=${cursor}`}`, { headers: { 'x-api-key': server.key } });
        if (response.status !== 200) throw new Error(`${q.query}: ${response.status} ${await response.text()}`);
        const body = (await response.json()) as { rows: unknown[]; nextCursor: string | null };
        // The first two runs are warmup (caches, prepared statements; the answer kept where it is).
        if (run >= 2) (pages === 0 ? firstPages : laterPages).push(Number(process.hrtime.bigint() - pageStarted) / 1e6);
        rows += body.rows.length;
        pages++;
        cursor = firstPageOnly ? null : body.nextCursor;
      } while (cursor !== null);
      if (run >= 2) times.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    out.push({ name: q.name, p50Ms: median(times), rows, pages, ...(pages > 1 ? { firstPageP50Ms: median(firstPages), laterPageP50Ms: median(laterPages) } : {}) });
  }
  return out;
}

/**
 * Loads live versions over 30 days (a child), starts the server on it, and times the issue's two
 * inventory reads: stored bytes per customer and day, and one bucket's first page of objects.
 */
async function runInventoryQuery(settings: Settings, phase: Phase, record: RunRecord): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bucketmeter-bench-inventory-'));
  const schema = phase.backend === 'postgres' ? new PgSchema(settings.databaseUrl!) : undefined;
  try {
    await schema?.create();
    const now = Math.floor(Date.now() / 86_400_000) * 86400;
    const spec: InventoryLoadSpec = { backend: phase.backend!, ...(schema ? { url: schema.url } : { dir }), versions: settings.inventoryVersions, days: 30, now };
    const loader = spawnNode(cpu(SERVER_CPU), [join(ROOT, 'dist/bench/inventory-load.js'), JSON.stringify(spec)]);
    let load: InventoryLoadResult;
    try {
      load = (await benchMessage<{ result: InventoryLoadResult }>(loader, 'result', 3_600_000)).result;
    } finally {
      await loader.stop(10_000);
    }
    await schema?.analyze();
    const server = await startBucketmeter({ cpu: cpu(SERVER_CPU), dataDir: dir, ...(schema ? { databaseUrl: schema.url } : {}), key: load.key });
    const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');
    const queries = [
      { name: 'GET /v1/usage granularity=day&groupBy=customerId&storage=true, 30 days', path: `/v1/usage?from=${iso(now - 30 * 86400)}&to=${iso(now)}&granularity=day&groupBy=customerId&storage=true`, targetMs: 200 },
      { name: `GET /v1/objects?bucket=${load.bucket}, first page (100)`, path: `/v1/objects?bucket=${load.bucket}`, targetMs: 50 },
    ];
    const results: { name: string; p50Ms: number; targetMs: number }[] = [];
    try {
      for (const q of queries) {
        const times: number[] = [];
        for (let run = 0; run < settings.usageQueryRuns + 2; run++) {
          const started = process.hrtime.bigint();
          const response = await fetch(`${server.url}${q.path}`, { headers: { 'x-api-key': server.key } });
          if (response.status !== 200) throw new Error(`${q.path}: ${response.status} ${await response.text()}`);
          await response.arrayBuffer();
          // The first two are warmup (caches, prepared statements).
          if (run >= 2) times.push(Number(process.hrtime.bigint() - started) / 1e6);
        }
        results.push({ name: q.name, p50Ms: median(times), targetMs: q.targetMs });
      }
    } finally {
      await server.stop(60_000);
    }
    record.inventoryQuery = { versions: load.versions, loadSeconds: load.seconds, queries: results };
  } finally {
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * /v1/costs over the same 30 days: the JSON answer by day and customer (each account's months priced
 * whole, then cut), and the FOCUS export of the fine rows (rows = CSV lines, header excluded).
 */
async function timeCosts(server: { url: string; key: string }, from: string, to: string, runs: number): Promise<UsageQueryResult['queries']> {
  const out: UsageQueryResult['queries'] = [];
  for (const q of [
    { name: 'costs: day, groupBy customerId', query: `from=${from}&to=${to}&granularity=day&groupBy=customerId`, focus: false },
    { name: 'costs: FOCUS export', query: `from=${from}&to=${to}&format=focus`, focus: true },
  ]) {
    const times: number[] = [];
    let rows = 0;
    let refused: string | undefined;
    for (let run = 0; run < runs + 1; run++) {
      const started = process.hrtime.bigint();
      const response = await getCosts(`${server.url}/v1/costs?${q.query}`, { 'x-api-key': server.key });
      if (response.status !== 200) {
        const body = await response.text();
        // Past the per-request bound: a figure of its own, not a failed run.
        if (body.includes('"BM_ERR_COST_TOO_LARGE"')) {
          refused = `${response.status} BM_ERR_COST_TOO_LARGE`;
          break;
        }
        throw new Error(`${q.query}: ${response.status} ${body}`);
      }
      if (q.focus) {
        // Counted as it arrives: an export can be longer than the longest string V8 makes.
        rows = -1;
        for await (const chunk of response.body! as AsyncIterable<Uint8Array>) {
          for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) rows++;
        }
      } else {
        rows = ((await response.json()) as { rows: unknown[] }).rows.length;
      }
      // The first is warmup.
      if (run >= 1) times.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    if (refused !== undefined) {
      out.push({ name: q.name, p50Ms: Number.NaN, rows: 0, pages: 0, refused });
      continue;
    }
    const p50Ms = median(times);
    out.push({ name: q.name, p50Ms, rows, pages: 1, ...(q.focus ? { rowsPerSec: (rows / p50Ms) * 1000 } : {}) });
  }
  return out;
}

async function runHttp(settings: Settings, phase: Phase, record: RunRecord): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bucketmeter-bench-'));
  const schema = phase.backend === 'postgres' ? new PgSchema(settings.databaseUrl!) : undefined;
  const profileDir = settings.cpuProf === phase.id ? mkdtempSync(join(tmpdir(), 'bucketmeter-bench-prof-')) : undefined;
  let server: (Child & { url: string; key?: string }) | undefined;
  let sampler: MemorySampler | undefined;
  try {
    await schema?.create();
    const nodeFlags = [...(settings.nodeFlags ?? []), ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])];
    if (phase.target === 'bucketmeter') {
      server = await startBucketmeter({ cpu: cpu(SERVER_CPU), dataDir, ...(schema ? { databaseUrl: schema.url } : {}), nodeFlags, ...(phase.env ? { env: phase.env } : {}) });
    } else {
      server = await startBaseline(cpu(SERVER_CPU), phase.target === 'hello' ? 'hello.js' : 'validate-only.js', nodeFlags);
    }
    // Started pinned whole; once it is up (the SQLite writer thread is started before the server listens),
    // everything but its main thread is let go.
    if (settings.pin === 'main-thread' && TASKSET) pinMainThreadOnly(server.pid, SERVER_CPU, ALL_CPUS);
    sampler = new MemorySampler(server.pid);
    const spec: LoadSpec = {
      url: server.url,
      ...(server.key ? { key: server.key } : {}),
      warmupSec: settings.warmupSec,
      durationSec: phase.sustained ? settings.sustainedSec : settings.durationSec,
      now: Math.floor(Date.now() / 1000),
      tag: randomBytes(4).toString('hex'),
      streams: phase.streams,
    };
    const loadgen = spawnNode(cpu(LOAD_CPU), [join(ROOT, 'dist/bench/loadgen.js'), JSON.stringify(spec)]);
    let load: LoadResult;
    let serverCpu: number;
    let otherCpu: number;
    let cores: Record<string, CoreTimes>;
    let threads: { main: number; busiestOther: number; rest: number };
    let measuredFrom: number;
    let measured: { fromUs: number; toUs: number };
    try {
      const limit = (spec.warmupSec + spec.durationSec + 120) * 1000;
      await benchMessage(loadgen, 'measure-start', limit);
      measuredFrom = Date.now();
      const fromUs = Number(process.hrtime.bigint() / 1000n);
      const cpuBefore = cpuSeconds(server.pid);
      const threadsBefore = threadCpuSeconds(server.pid);
      const loadgenBefore = cpuSeconds(loadgen.pid);
      const coresBefore = coreTimes();
      const selfBefore = process.cpuUsage();
      load = (await benchMessage<{ result: LoadResult }>(loadgen, 'result', limit)).result;
      const seconds = (Date.now() - measuredFrom) / 1000;
      measured = { fromUs, toUs: Number(process.hrtime.bigint() / 1000n) };
      serverCpu = (cpuSeconds(server.pid) - cpuBefore) / seconds;
      threads = threadSplit(server.pid, threadsBefore, threadCpuSeconds(server.pid), seconds);
      const self = process.cpuUsage(selfBefore);
      const ours = serverCpu * seconds + (cpuSeconds(loadgen.pid) - loadgenBefore) + (self.user + self.system) / 1e6;
      cores = coreShares(coresBefore, coreTimes());
      // Whatever else ran on the machine meanwhile (task time only, kernel network processing apart):
      // anything above a few percent of a core makes the run suspect.
      const tasks = Object.values(cores).reduce((sum, c) => sum + c.tasks, 0);
      otherCpu = Math.max(0, tasks - ours / seconds);
      if (phase.target === 'bucketmeter' && phase.streams.length === 1) {
        const events = load.streams[0]!.eventsAccepted;
        const cpuAtEnd = cpuSeconds(server.pid);
        const usageOn = phase.env?.BUCKETMETER_BENCH_NO_USAGE !== '1';
        const drainSeconds = usageOn ? await derivedDrain(server.url, phase.env?.BUCKETMETER_BENCH_NO_INVENTORY !== '1') : 0;
        record.drain = { seconds: drainSeconds, cpuUsPerEvent: (serverCpu * seconds * 1e6) / events, drainCpuUsPerEvent: usageOn ? ((cpuSeconds(server.pid) - cpuAtEnd) * 1e6) / events : 0 };
      }
    } finally {
      await loadgen.stop(5_000);
    }
    record.load = load;
    record.server = { peakRssMb: sampler.peakMb, largestSample: sampler.atPeak, cpuCores: serverCpu, threads, otherCpuCores: otherCpu, cores, affinity: threadAffinity(server.pid) };
    if (phase.sustained) {
      const w = settings.flatWindowSec;
      const first = sampler.meanBetween(measuredFrom, 0, w);
      const last = sampler.meanBetween(measuredFrom, spec.durationSec - w, spec.durationSec);
      const slope = sampler.slopeBetween(measuredFrom, spec.durationSec / 2, spec.durationSec);
      record.server.rss = { firstWindowMb: first, lastWindowMb: last, growth: last / first - 1, windowSec: w, secondHalfMbPerMin: slope * 60 };
      // One sample a second, timed from the start of the measured window.
      const offset = (measuredFrom - sampler.started) / 1000;
      record.server.rssSeries = sampler.samples.filter((_, i) => i % 5 === 0).map((s) => [Number((s.t - offset).toFixed(1)), Number(s.rssMb.toFixed(1))]);
    }
    const stopped = await server.stop(60_000);
    record.server.stop = stopped;
    server = undefined;
    if (phase.target === 'bucketmeter') {
      if (stopped.code !== 0) throw new Error(`server did not stop cleanly: ${JSON.stringify(stopped)}`);
      const acknowledged = load.streams.reduce((sum, s) => sum + s.eventsAccepted + s.duplicates, 0);
      record.disk = schema ? await schema.disk(acknowledged) : sqliteDisk(dataDir, acknowledged);
    }
    if (profileDir) {
      // One file per thread (CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile): 0 is the main thread.
      record.profiles = readdirSync(profileDir)
        .filter((name) => name.endsWith('.cpuprofile'))
        .sort()
        .map((name) => {
          const thread = name.split('.')[4] ?? '?';
          return { thread: thread === '0' ? 'main thread' : `worker thread ${thread}`, file: join(profileDir, name), summary: summarizeProfile(join(profileDir, name), measured) };
        });
    }
  } finally {
    sampler?.stop();
    if (server) await server.stop(10_000);
    await schema?.drop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function progressLine(record: RunRecord, phase: Phase): string {
  // NaN (no sample) arrives as null through the children's JSON.
  const f = (n: number | null, digits = 0) => (n === null || Number.isNaN(n) ? '–' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
  if (!record.ok) return `FAILED: ${record.error}`;
  const parts: string[] = [];
  if (record.quiet && record.quiet.waitedSec > 1.5) parts.push(`waited ${f(record.quiet.waitedSec)} s for a quiet machine${record.quiet.busyCores > NOISY_CORES ? ` (still ${f(record.quiet.busyCores, 2)} cores busy)` : ''}`);
  if (record.raw) parts.push(`${f(record.raw.rowsPerSec)} rows/s${record.raw.bytesPerRow > 0 ? `, ${f(record.raw.bytesPerRow, 1)} B/row` : ''}`);
  if (record.rawOtherCpuCores !== undefined) {
    const noisy = phase.backend !== 'postgres' && record.rawOtherCpuCores > NOISY_CORES;
    parts.push(`other processes${phase.backend === 'postgres' ? ' (PostgreSQL included)' : ''} ${f(record.rawOtherCpuCores, 2)} cores${noisy ? ' (NOISY)' : ''}`);
  }
  for (const s of record.load?.streams ?? []) {
    parts.push(`${s.name}: ${f(s.reqPerSec)} req/s ${f(s.eventsPerSec)} ev/s p50 ${f(s.latencyMs.p50, 2)} ms p99 ${f(s.latencyMs.p99, 2)} ms${s.non2xx ? ` non-2xx ${s.non2xx} ${JSON.stringify(s.statusCodes)}` : ''}${s.errors ? ` errors ${s.errors}` : ''}`);
  }
  if (record.server) {
    const t = record.server.threads;
    parts.push(`server ${f(record.server.cpuCores, 2)} cores (main ${f(t.main, 2)}, busiest other thread ${f(t.busiestOther, 2)}, rest ${f(t.rest, 2)}), peak RSS ${f(record.server.peakRssMb)} MB (largest sample ${f(record.server.largestSample.rssMb)} MB: anon ${f(record.server.largestSample.anonMb)}, file ${f(record.server.largestSample.fileMb)}, shmem ${f(record.server.largestSample.shmemMb)})`);
    const pct = (n: number | undefined) => `${Math.round((n ?? Number.NaN) * 100)}%`;
    const c0 = record.server.cores[`cpu${SERVER_CPU}`];
    const c1 = record.server.cores[`cpu${LOAD_CPU}`];
    parts.push(`core ${SERVER_CPU}: ${pct(c0?.tasks)} tasks + ${pct(c0?.interrupts)} softirq, idle ${pct(c0?.idle)}; core ${LOAD_CPU}: ${pct(c1?.tasks)} + ${pct(c1?.interrupts)}, idle ${pct(c1?.idle)}`);
  }
  if (record.load) parts.push(`loadgen ${f(record.load.cpuCores, 2)} cores`);
  if (record.server) {
    const noisy = phase.backend !== 'postgres' && record.server.otherCpuCores > NOISY_CORES;
    parts.push(`other processes${phase.backend === 'postgres' ? ' (PostgreSQL included)' : ''} ${f(record.server.otherCpuCores, 2)} cores${noisy ? ' (NOISY)' : ''}`);
  }
  if (record.server?.rss) parts.push(`RSS ${f(record.server.rss.firstWindowMb)} -> ${f(record.server.rss.lastWindowMb)} MB, second half ${f(record.server.rss.secondHalfMbPerMin, 1)} MB/min`);
  if (record.disk) parts.push(`disk ${f(record.disk.bytesPerEvent, 1)} B/event (${f(record.disk.events)} stored, ${f(record.disk.acknowledged)} acked)`);
  return parts.join(' | ');
}

async function main(): Promise<void> {
  const settings = readSettings();
  setNiceness(settings.nice);
  const all = phases(settings.databaseUrl !== undefined);
  const selected = settings.only ? all.filter((p) => settings.only!.includes(p.id) || p.groups.some((g) => settings.only!.includes(g))) : all;
  if (selected.length === 0) throw new Error(`--only matched no phase; phases: ${all.map((p) => p.id).join(', ')}`);
  if (!TASKSET) process.stderr.write('warning: taskset not found; server and load generator are not pinned to separate cores\n');
  if (settings.databaseUrl === undefined) process.stdout.write('PostgreSQL phases skipped (no --database-url / BENCH_DATABASE_URL)\n');

  const startedAt = new Date();
  const records: RunRecord[] = [];
  process.stdout.write(`bench ${settings.mode}: ${settings.runs} run(s) of ${selected.map((p) => p.id).join(', ')}\n`);
  for (let run = 1; run <= settings.runs; run++) {
    for (const phase of selected) {
      const record: RunRecord = { phase: phase.id, run, ok: true };
      const began = Date.now();
      try {
        if (settings.quietWaitSec > 0) record.quiet = await waitForQuiet(settings.quietWaitSec);
        if (phase.target === 'raw' || phase.target === 'store') await runRaw(settings, phase, record);
        else if (phase.target === 'usage-query') await runUsageQuery(settings, phase, record);
        else if (phase.target === 'inventory-query') await runInventoryQuery(settings, phase, record);
        else await runHttp(settings, phase, record);
      } catch (error) {
        record.ok = false;
        record.error = error instanceof Error ? error.message : String(error);
      }
      records.push(record);
      process.stdout.write(`[${phase.id} ${run}/${settings.runs}, ${((Date.now() - began) / 1000).toFixed(0)} s] ${progressLine(record, phase)}\n`);
      for (const p of record.profiles ?? []) process.stdout.write(`cpu profile, ${p.thread}, measured window (${p.file}):\n${formatProfile(p.summary)}\n`);
    }
  }

  const results: BenchResults = {
    version: 1,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    settings: { ...settings, ...(settings.databaseUrl ? { databaseUrl: settings.databaseUrl.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@') } : {}) },
    machine: describeMachine(tmpdir()),
    pinned: TASKSET,
    phases: selected.map((p) => ({ id: p.id, title: p.title, target: p.target, streams: p.streams.map((s) => ({ name: s.name, path: s.path, connections: s.connections, batch: s.batch })) })),
    runs: records,
    summary: summarize(selected, records),
  };
  // Written before the report is rendered: a run of many minutes is not lost to a report's mistake.
  const dir = join(ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const json = JSON.stringify(results, null, 2) + '\n';
  const file = join(dir, `${stamp}${settings.mode === 'quick' ? '-quick' : ''}.json`);
  writeFileSync(file, json);
  // Quick, partial and experimental runs keep their own file only: latest.json is the last full run.
  const complete = settings.mode === 'full' && settings.only === undefined && settings.cpuProf === undefined && settings.nodeFlags === undefined;
  if (complete) writeFileSync(join(dir, 'latest.json'), json);
  const report = renderReport(results);
  process.stdout.write(`\n${report}\n`);
  process.stdout.write(`results: ${file}${complete ? ' (and bench/results/latest.json)' : ''}\n`);
  if (settings.docs) {
    updateDocs(join(ROOT, 'docs/BENCHMARKS.md'), results, report);
    process.stdout.write('docs/BENCHMARKS.md updated\n');
  }
  if (records.some((r) => !r.ok)) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
