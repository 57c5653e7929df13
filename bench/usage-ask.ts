/**
 * `node dist/bench/usage-ask.js '<spec>'`: chosen /v1/usage queries over the last 30 days of a store
 * already loaded by usage-query.ts (kept by `--usage-dir`), each computed every time (the server
 * keeps no answer), so that builds that route a query to different sources can be timed on the same
 * data. Per query: the p50 of `runs` whole answers over HTTP and the server's CPU per answer (/proc,
 * every thread). Prints one `BENCH {...}` line per query. `spec`: { kept (the kept directory, its
 * load.json: key, now, hot customer), dir (SQLite) or databaseUrl, runs, queries (query strings;
 * HOT stands for the hot customer) }.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { UsageLoadResult } from './usage-query.js';
import { cpuSeconds, runBench, startBucketmeter } from './proc.js';
import { median } from './stats.js';

interface Spec {
  kept: string;
  dir?: string;
  databaseUrl?: string;
  runs: number;
  queries: string[];
}

const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as Spec;
  const load = JSON.parse(readFileSync(join(spec.kept, 'load.json'), 'utf8')) as UsageLoadResult & { now: number };
  const server = await startBucketmeter({
    cpu: undefined,
    dataDir: spec.dir ?? '/nonexistent',
    ...(spec.databaseUrl === undefined ? {} : { databaseUrl: spec.databaseUrl }),
    key: load.key,
    args: ['--usage-kept-rows', '0'],
  });
  try {
    const range = `from=${iso(load.now - 30 * 86400)}&to=${iso(load.now)}`;
    for (const query of spec.queries) {
      const url = `${server.url}/v1/usage?${range}&${query.replaceAll('HOT', load.hotCustomer)}`;
      const ms: number[] = [];
      const cpu: number[] = [];
      let rows = 0;
      for (let run = 0; run < spec.runs; run++) {
        const before = cpuSeconds(server.pid);
        const started = process.hrtime.bigint();
        const response = await fetch(url, { headers: { 'x-api-key': load.key } });
        const body = (await response.json()) as { rows: unknown[]; nextCursor: string | null };
        if (response.status !== 200 || body.nextCursor !== null) throw new Error(`${query}: ${response.status} ${JSON.stringify(body).slice(0, 500)}`);
        ms.push(Number(process.hrtime.bigint() - started) / 1e6);
        cpu.push(cpuSeconds(server.pid) - before);
        rows = body.rows.length;
      }
      process.stdout.write(`BENCH ${JSON.stringify({ event: 'result', query, rows, p50Ms: median(ms), cpuP50S: median(cpu) })}\n`);
    }
  } finally {
    await server.stop(60_000);
  }
}

runBench('usage ask', main);
