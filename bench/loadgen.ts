/**
 * The load generator process: autocannon driving one or more request streams at a server, started by
 * run.ts pinned to its own core. Reads its LoadSpec (JSON) from argv[2]; writes `BENCH <json>` lines
 * on stdout: `measure-start` when the measured window opens, then `result`.
 *
 * Latencies are taken from autocannon's per-response event (sub-millisecond), not from its histogram
 * (whole milliseconds), and only for 2xx replies. With `verify: 'ingest'`, each reply body is checked
 * so that events/s counts what the server acknowledged, not what was sent.
 */
import autocannon from 'autocannon';
import { batchBodies, eventIdSource, singleBodies } from './mix.js';
import type { BodyTemplate } from './mix.js';
import { Samples, percentileSorted } from './stats.js';

export interface StreamSpec {
  name: string;
  path: string;
  connections: number;
  /** Events per request; 0 sends one event as a JSON object (not an array). */
  batch: number;
  /** Distinct bodies to cycle through. */
  pool: number;
  /** Seed of the event stream (see mix.ts). */
  seed: number;
  /** 'ingest': the reply is bucketmeter's (or mirrors it) and is checked; 'status': only 2xx counts. */
  verify: 'ingest' | 'status';
  /**
   * false: a server that stores nothing (the baselines) may see the same eventIds again, so the
   * requests are built once and autocannon replays them, which costs the load generator much less.
   */
  unique: boolean;
}

/** Distinct requests each connection replays when `unique` is false. */
const STATIC_POOL = 256;

export interface LoadSpec {
  url: string;
  key?: string;
  warmupSec: number;
  durationSec: number;
  /** Unix seconds the bodies are stamped at (their events up to an hour before); each build of a request moves them on by the time since. */
  now: number;
  /** Makes client eventIds unique across runs. */
  tag: string;
  streams: StreamSpec[];
}

export interface LatencySummary {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export interface StreamResult {
  name: string;
  durationSec: number;
  responses2xx: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  errors: number;
  timeouts: number;
  eventsAccepted: number;
  duplicates: number;
  eventsRejected: number;
  reqPerSec: number;
  eventsPerSec: number;
  latencyMs: LatencySummary;
}

export interface LoadResult {
  streams: StreamResult[];
  /** CPU time of this process over the measured window, in cores (1.0 = one core saturated). */
  cpuCores: number;
}

function emit(message: object): void {
  process.stdout.write(`BENCH ${JSON.stringify(message)}\n`);
}

function bodiesFor(spec: StreamSpec, now: number): BodyTemplate[] {
  return spec.batch === 0 ? singleBodies(spec.pool, now, spec.seed) : batchBodies(spec.pool, spec.batch, now, spec.seed);
}

interface Counters {
  accepted: number;
  duplicates: number;
  rejected: number;
}

function runStream(load: LoadSpec, spec: StreamSpec, bodies: BodyTemplate[], nextId: () => string, seconds: number, record: boolean): Promise<StreamResult> {
  const counters: Counters = { accepted: 0, duplicates: 0, rejected: 0 };
  const latencies = new Samples();
  let cursor = 0;
  // The bodies were stamped at load.now: each build moves its events' timestamps on by the time since
  // (every send of a unique stream; a static pool's requests, built once per run, at the run's start).
  const shift = () => Math.floor(Date.now() / 1000) - load.now;
  const requests: autocannon.Request[] = spec.unique
    ? [{ method: 'POST', path: spec.path, setupRequest: (req) => ({ ...req, body: bodies[cursor++ % bodies.length]!.build(nextId, shift()) }) }]
    : bodies.slice(0, STATIC_POOL).map((template) => ({ method: 'POST', path: spec.path, body: template.build(nextId, shift()) }));
  if (spec.verify === 'ingest') {
    const onResponse = (status: number, body: string) => {
      if (status !== 200) return;
      if (spec.batch === 0) {
        if (body.includes('"duplicate":true')) counters.duplicates++;
        else counters.accepted++;
        return;
      }
      const reply = JSON.parse(body) as { accepted: number; duplicates: number; rejected: unknown[] };
      counters.accepted += reply.accepted;
      counters.duplicates += reply.duplicates;
      counters.rejected += reply.rejected.length;
    };
    for (const request of requests) request.onResponse = onResponse;
  }
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'bucketmeter-bench/1' };
  if (load.key !== undefined) headers['x-api-key'] = load.key;
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const instance = autocannon(
      { url: load.url, connections: spec.connections, pipelining: 1, duration: seconds, timeout: 30, headers, requests },
      (error, result) => {
        if (error) return reject(error);
        const durationSec = Number(process.hrtime.bigint() - started) / 1e9;
        const sorted = latencies.sorted();
        let sum = 0;
        for (const v of sorted) sum += v;
        const statusCodes: Record<string, number> = {};
        for (const [code, { count }] of Object.entries(result.statusCodeStats)) statusCodes[code] = count;
        const responses2xx = result['2xx'];
        const eventsAccepted = spec.verify === 'ingest' ? counters.accepted : responses2xx * Math.max(1, spec.batch);
        resolve({
          name: spec.name,
          durationSec,
          responses2xx,
          non2xx: result.non2xx,
          statusCodes,
          errors: result.errors,
          timeouts: result.timeouts,
          eventsAccepted,
          duplicates: counters.duplicates,
          eventsRejected: counters.rejected,
          reqPerSec: responses2xx / durationSec,
          eventsPerSec: eventsAccepted / durationSec,
          latencyMs: {
            p50: percentileSorted(sorted, 50),
            p90: percentileSorted(sorted, 90),
            p99: percentileSorted(sorted, 99),
            max: sorted.length > 0 ? sorted[sorted.length - 1]! : Number.NaN,
            mean: sorted.length > 0 ? sum / sorted.length : Number.NaN,
          },
        });
      },
    );
    if (record) {
      instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
        if (status >= 200 && status < 300) latencies.push(ms);
      });
    }
  });
}

async function main(): Promise<void> {
  const load = JSON.parse(process.argv[2] ?? '') as LoadSpec;
  const streams = load.streams.map((spec) => ({ spec, bodies: bodiesFor(spec, load.now) }));
  const nextId = eventIdSource(load.tag);
  if (load.warmupSec > 0) {
    await Promise.all(streams.map(({ spec, bodies }) => runStream(load, spec, bodies, nextId, load.warmupSec, false)));
  }
  emit({ event: 'measure-start' });
  const cpu = process.cpuUsage();
  const wall = process.hrtime.bigint();
  const results = await Promise.all(streams.map(({ spec, bodies }) => runStream(load, spec, bodies, nextId, load.durationSec, true)));
  const used = process.cpuUsage(cpu);
  const result: LoadResult = {
    streams: results,
    cpuCores: (used.user + used.system) / 1e6 / (Number(process.hrtime.bigint() - wall) / 1e9),
  };
  emit({ event: 'result', result });
}

main().catch((error: unknown) => {
  process.stderr.write(`loadgen failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
