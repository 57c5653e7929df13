/**
 * The floor under a query's time set by its answer's size alone: a saved answer served from memory by
 * a bare node:http server on loopback, fetched and parsed as the usage-query phase's client does
 * (fetch, response.json()). No store, no query, no writing of the answer: what is left is moving and
 * parsing its bytes, which no server-side work can take below.
 *
 *   node dist/bench/answer-floor.js FILE [runs]   → p50 and range in ms, and the answer's size
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { median } from './stats.js';

async function main(): Promise<void> {
  const [file, runsText] = process.argv.slice(2);
  if (file === undefined) throw new Error('usage: answer-floor.js FILE [runs]');
  const runs = Number(runsText ?? 20);
  const body = readFileSync(file);
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const times: number[] = [];
  let rows = 0;
  // Two warm-ups, as the usage-query phase runs them.
  for (let run = 0; run < runs + 2; run++) {
    const started = process.hrtime.bigint();
    const answer = (await (await fetch(url)).json()) as { rows: unknown[] };
    rows = answer.rows.length;
    if (run >= 2) times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  server.close();
  const sorted = [...times].sort((a, b) => a - b);
  process.stdout.write(
    `${file}: ${rows} rows, ${(body.length / 1e6).toFixed(1)} MB: fetched and parsed in p50 ${median(times).toFixed(1)} ms (${sorted[0]!.toFixed(1)}–${sorted[sorted.length - 1]!.toFixed(1)}, ${runs} runs)\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`answer-floor failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
