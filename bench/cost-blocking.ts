/**
 * `node dist/bench/cost-blocking.js '<spec>'`: what one cold /v1/costs costs everyone else. On a
 * store already loaded by usage-query.ts, starts the real server and times, one request after the
 * other, `/v1/usage?granularity=none` and a one-event `POST /storage/batch`:
 * - idle: for `idleMs`, with nothing else running;
 * - during: while one cold cost request (the month never priced by this process) runs.
 * Prints one `BENCH {...}` line: p50 and max of each, how many were answered, the cost request's
 * wall time, and the load averages at start and end. With `alone`, only the cost request, nothing
 * beside it (the other requests' own load, PostgreSQL's above all, slows it too).
 * `spec`: { dir (SQLite) or databaseUrl, key, now (the loader's), idleMs, alone }.
 */
import { loadavg } from 'node:os';
import { getCosts, runBench, startBucketmeter } from './proc.js';
import { median } from './stats.js';

interface Spec {
  dir?: string;
  databaseUrl?: string;
  key: string;
  now: number;
  idleMs?: number;
  alone?: boolean;
}

const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');

interface Timings {
  usage: number[];
  ingest: number[];
}

const summary = (ms: number[]) => ({ n: ms.length, p50: Math.round(median(ms) * 10) / 10, max: Math.round(Math.max(...ms) * 10) / 10 });

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as Spec;
  const load = [loadavg()];
  const server = await startBucketmeter({ cpu: undefined, dataDir: spec.dir ?? '/nonexistent', ...(spec.databaseUrl === undefined ? {} : { databaseUrl: spec.databaseUrl }), key: spec.key });
  const headers = { 'x-api-key': server.key };
  const range = `from=${iso(spec.now - 30 * 86400)}&to=${iso(spec.now)}`;
  let sent = 0;
  const timed = async (send: () => Promise<Response>, into: number[]) => {
    const started = process.hrtime.bigint();
    const response = await send();
    const body = await response.text();
    if (response.status !== 200) throw new Error(`${response.url}: ${response.status} ${body.slice(0, 500)}`);
    into.push(Number(process.hrtime.bigint() - started) / 1e6);
  };
  // Other requests, one at a time, until `until` settles.
  const others = async (until: Promise<unknown>): Promise<Timings> => {
    let done = false;
    void until.finally(() => (done = true)).catch(() => {});
    const out: Timings = { usage: [], ingest: [] };
    while (!done) {
      await timed(() => fetch(`${server.url}/v1/usage?${range}&granularity=none`, { headers }), out.usage);
      // An hour after the loader's now: outside the cost request's range and what it prices.
      const event = { action: 'PutObject', provider: 'aws', bucket: 'bench-blocking', objectKey: `k${sent}`, bytes: 1000, timestamp: iso(spec.now + 3600), eventId: `blocking-${Date.now()}-${sent++}` };
      await timed(() => fetch(`${server.url}/storage/batch`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify([event]) }), out.ingest);
    }
    return out;
  };
  try {
    const idle = spec.alone === true ? { usage: [], ingest: [] } : await others(new Promise((done) => setTimeout(done, spec.idleMs ?? 5000)));
    const started = process.hrtime.bigint();
    const cost = getCosts(`${server.url}/v1/costs?${range}&granularity=day&groupBy=customerId`, headers).then(async (response) => {
      const body = await response.text();
      if (response.status !== 200) throw new Error(`cost: ${response.status} ${body.slice(0, 500)}`);
      return Number(process.hrtime.bigint() - started) / 1e6;
    });
    const [costMs, during] = await Promise.all([cost, spec.alone === true ? { usage: [], ingest: [] } : others(cost)]);
    load.push(loadavg());
    const result = {
      costMs: Math.round(costMs),
      ...(spec.alone === true ? {} : { idle: { usage: summary(idle.usage), ingest: summary(idle.ingest) }, during: { usage: summary(during.usage), ingest: summary(during.ingest) } }),
      loadAverages: load.map((l) => l.map((v) => Math.round(v * 100) / 100)),
    };
    process.stdout.write(`BENCH ${JSON.stringify({ event: 'result', result })}\n`);
  } finally {
    await server.stop(60_000);
  }
}

runBench('cost blocking', main);
