/**
 * `node dist/bench/cost-query.js '<spec>'`: /v1/costs on a store already loaded by usage-query.ts
 * (kept, so that both stores and builds can be timed on the same data without reloading it). Times,
 * through HTTP as a client sees it:
 * - cold: each run first stores one event of the range (a new version of its month), so that the
 *   answer is priced again (the month it did not touch is reused, as in production);
 * - warm: the same answer again, every month kept (what a dashboard's repeated reads cost);
 * - the FOCUS export of the last day of the range (rows/s = CSV lines over the p50).
 * A month still being priced past the server's bound is answered 503 BM_ERR_COST_NOT_READY: asked
 * again after its Retry-After, the waits counted in the time (so a first answer is known to ±10 s).
 * With each: the server's CPU seconds over it (/proc, every thread) and its peak resident memory.
 * Prints one `BENCH {...}` line. `spec`: { dir (SQLite) or databaseUrl, key, now (the loader's), runs, coldRuns,
 * args (the server's, e.g. a longer --request-timeout-ms: a first month at 10M events prices for
 * minutes, and the server closes a connection after twice that timeout) }.
 */
import { Agent, setGlobalDispatcher } from 'undici';
import { MemorySampler, cpuSeconds, getCosts, runBench, startBucketmeter } from './proc.js';
import { median } from './stats.js';

interface Spec {
  dir?: string;
  databaseUrl?: string;
  key: string;
  now: number;
  runs: number;
  /** Cold runs (default `runs`): at 10M events each prices its month again, for minutes. */
  coldRuns?: number;
  args?: string[];
}

const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');

async function main(): Promise<void> {
  // fetch gives up on an answer's headers after 300 s: a first month at 10M events takes longer.
  setGlobalDispatcher(new Agent({ headersTimeout: 0, bodyTimeout: 0 }));
  const spec = JSON.parse(process.argv[2] ?? '') as Spec;
  const server = await startBucketmeter({ cpu: undefined, dataDir: spec.dir ?? '/nonexistent', ...(spec.databaseUrl === undefined ? {} : { databaseUrl: spec.databaseUrl }), key: spec.key, args: spec.args ?? [] });
  const memory = new MemorySampler(server.pid);
  const headers = { 'x-api-key': server.key };
  const timeGet = async (query: string): Promise<{ ms: number; body: string; cpuS: number }> => {
    const cpu = cpuSeconds(server.pid);
    const started = process.hrtime.bigint();
    const response = await getCosts(`${server.url}/v1/costs?${query}`, headers);
    const body = await response.text();
    if (response.status !== 200) throw new Error(`${query}: ${response.status} ${body.slice(0, 500)}`);
    return { ms: Number(process.hrtime.bigint() - started) / 1e6, body, cpuS: cpuSeconds(server.pid) - cpu };
  };
  /** The FOCUS CSV's lines, counted as the body streams in: at 1M events a day of it passes the longest string V8 makes. */
  const timeLines = async (query: string): Promise<{ ms: number; lines: number }> => {
    const started = process.hrtime.bigint();
    const response = await getCosts(`${server.url}/v1/costs?${query}`, headers);
    if (response.status !== 200) throw new Error(`${query}: ${response.status} ${(await response.text()).slice(0, 500)}`);
    let lines = 0;
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++;
    }
    return { ms: Number(process.hrtime.bigint() - started) / 1e6, lines };
  };
  /** Each step's figures as soon as it is done: a 10M run takes an hour, and a later failure must not lose them. */
  const progress = (step: string, figures: Record<string, number>) => process.stdout.write(`BENCH ${JSON.stringify({ event: 'progress', step, ...figures })}\n`);
  try {
    const range = `from=${iso(spec.now - 30 * 86400)}&to=${iso(spec.now)}`;
    const day = `${range}&granularity=day&groupBy=customerId`;
    const first = await timeGet(day);
    const firstPeakMb = memory.peakMb;
    progress('first', { ms: first.ms, cpuS: first.cpuS, peakRssMb: firstPeakMb });
    const cold: number[] = [];
    const coldCpu: number[] = [];
    for (let run = 0; run < (spec.coldRuns ?? spec.runs); run++) {
      const event = { action: 'GetObject', provider: 'aws', bucket: 'bench-cold', objectKey: `k${run}`, bytes: 1000, customerId: 'cus_bench', timestamp: iso(spec.now - 3600 - run), eventId: `cold-${Date.now()}-${run}` };
      const put = await fetch(`${server.url}/s3/batch`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify([event]) });
      if (put.status !== 200) throw new Error(`ingest: ${put.status} ${await put.text()}`);
      const got = await timeGet(day);
      cold.push(got.ms);
      coldCpu.push(got.cpuS);
      progress('cold', { ms: got.ms, cpuS: got.cpuS, peakRssMb: memory.peakMb });
    }
    const warm: number[] = [];
    const warmCpu: number[] = [];
    let rows = 0;
    for (let run = 0; run < spec.runs; run++) {
      const got = await timeGet(day);
      rows = (JSON.parse(got.body) as { rows: unknown[] }).rows.length;
      warm.push(got.ms);
      warmCpu.push(got.cpuS);
      progress('warm', { ms: got.ms, cpuS: got.cpuS, rows });
    }
    const focusTimes: number[] = [];
    let lines = 0;
    for (let run = 0; run < 3; run++) {
      const got = await timeLines(`from=${iso(spec.now - 86400)}&to=${iso(spec.now)}&format=focus`);
      // The header is no row.
      lines = got.lines - 1;
      focusTimes.push(got.ms);
      progress('focus', { ms: got.ms, lines });
    }
    const focusMs = median(focusTimes);
    const result = {
      firstMs: first.ms,
      firstCpuS: first.cpuS,
      firstPeakRssMb: firstPeakMb,
      coldP50Ms: median(cold),
      coldCpuP50S: median(coldCpu),
      warmP50Ms: median(warm),
      warmCpuP50S: median(warmCpu),
      rows,
      focusLines: lines,
      focusMs,
      focusRowsPerSec: Math.round((lines / focusMs) * 1000),
      peakRssMb: memory.peakMb,
    };
    process.stdout.write(`BENCH ${JSON.stringify({ event: 'result', result })}\n`);
  } catch (error) {
    // A failed answer (a 500 is a bug) is diagnosed from the server's log lines, lost with the server otherwise.
    process.stderr.write(`server output (tail):\n${server.output().slice(-20_000)}\n`);
    throw error;
  } finally {
    memory.stop();
    await server.stop(60_000);
  }
}

runBench('cost query', main);
