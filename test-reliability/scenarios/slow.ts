/**
 * Slow clients: connections whose headers trickle in (slowloris), whose body trickles in, or that
 * send nothing at all. --request-timeout-ms must cut each of them (408 problem+json where an answer
 * can still be written) without starving normal clients, whose latency is measured meanwhile.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { minimalWireEvent } from '../../test/support/events.js';
import { createKey, startServer } from '../../test/support/server.js';
import { MiB, Tally, quantile, report, sampleRss } from '../support/measure.js';
import { exchange } from '../support/raw-http.js';
import type { Exchange, ExchangeOptions } from '../support/raw-http.js';
import { serverOptions, sqliteTarget, storeArgs } from '../support/stores.js';

export interface SlowOptions {
  requestTimeoutMs: number;
  /** Connections whose headers never end. */
  slowHeaders: number;
  /** Connections whose body never ends. */
  slowBodies: number;
  /** Connections that send nothing. */
  idle: number;
  normalClients: number;
  /** How long past its timeout (and the server's next check of it) a slow connection may stay open. */
  cutSlackMs: number;
  /** Normal clients keep their latency: p99 during the attack at most max(floor, factor × p99 before). */
  latencyFloorMs: number;
  latencyFactor: number;
}

const TENANT = 'slow';
const DRIP_MS = 200;

/** Writes `head`, then one byte of `drip` every DRIP_MS until the server answers or closes. */
function trickle(head: string, drip: string): ExchangeOptions['write'] {
  return async (socket, answered) => {
    socket.write(head);
    for (let i = 0; !answered() && !socket.destroyed; i++) {
      await sleep(DRIP_MS);
      if (!answered() && !socket.destroyed) socket.write(drip[i % drip.length]!);
    }
  };
}

/** Normal clients, one single-event request after another, until `stop()`: latencies and failures. */
async function normalLoad(pool: Pool, key: string, clients: number, stop: () => boolean, tag: string): Promise<{ ms: number[]; failed: Tally<string> }> {
  const ms: number[] = [];
  const failed = new Tally<string>();
  let n = 0;
  const body = (id: string) => JSON.stringify({ ...minimalWireEvent('GetObject'), eventId: id });
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (!stop()) {
        const started = performance.now();
        try {
          const reply = await pool.request({ method: 'POST', path: '/s3', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: body(`${tag}-${n++}`) });
          await reply.body.text();
          if (reply.statusCode === 200) ms.push(performance.now() - started);
          else failed.add(String(reply.statusCode));
        } catch (error) {
          failed.add((error as Error).message);
        }
      }
    }),
  );
  return { ms, failed };
}

export async function slowScenario(t: TestContext, options: SlowOptions): Promise<void> {
  const T = options.requestTimeoutMs;
  const target = sqliteTarget();
  const key = await createKey(TENANT, storeArgs(target));
  const server = await startServer(serverOptions(target, ['--request-timeout-ms', String(T)]));
  t.after(() => server.kill());
  const rss = sampleRss(server.child.pid!);
  t.after(() => rss.stop());
  const pool = new Pool(server.url, { connections: options.normalClients });

  const baselineUntil = Date.now() + 3000;
  const baseline = await normalLoad(pool, key, options.normalClients, () => Date.now() >= baselineUntil, 'before');

  // The attack: every slow connection opened within the first second, each measured until the server closes it.
  const headers = `POST /s3 HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nX-Slow: `;
  const body = `POST /s3 HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n[`;
  const waitMs = 2 * T + 10_000;
  const kinds: { kind: string; count: number; write: ExchangeOptions['write']; limitMs: number }[] = [
    // Headers and body: the request timeout, checked every quarter of it (at most 1 s). Idle: the socket timeout, twice the request timeout.
    { kind: 'headers', count: options.slowHeaders, write: trickle(headers, 'abcdefgh'), limitMs: T + Math.min(1000, T / 4) + options.cutSlackMs },
    { kind: 'body', count: options.slowBodies, write: trickle(body, '{}, '), limitMs: T + Math.min(1000, T / 4) + options.cutSlackMs },
    { kind: 'idle', count: options.idle, write: async () => {}, limitMs: 2 * T + options.cutSlackMs },
  ];
  let attacking = true;
  const during = normalLoad(pool, key, options.normalClients, () => !attacking, 'during');
  const results = await Promise.all(
    kinds.flatMap(({ kind, count, write, limitMs }) =>
      Array.from({ length: count }, async (_, i): Promise<{ kind: string; limitMs: number; result: Exchange }> => {
        await sleep((i / count) * 1000);
        return { kind, limitMs, result: await exchange(server.port, { write, waitMs }) };
      }),
    ),
  );
  attacking = false;
  const normal = await during;
  await pool.close();
  const peak = rss.stop();
  assert.equal(server.child.exitCode, null, 'the server is alive');
  assert.equal(await server.stop(), 0);

  const byKind: Record<string, { count: number; closedMaxMs: number; closedP50Ms: number; answered408: number; overLimit: number }> = {};
  for (const { kind } of kinds) {
    const mine = results.filter((r) => r.kind === kind);
    const closed = mine.map((r) => r.result.closedAfterMs ?? Infinity);
    const limitMs = mine[0]?.limitMs ?? 0;
    byKind[kind] = {
      count: mine.length,
      closedMaxMs: quantile(closed, 1),
      closedP50Ms: quantile(closed, 0.5),
      answered408: mine.filter((r) => r.result.responses[0]?.status === 408 && r.result.responses[0].headers['content-type']?.startsWith('application/problem+json')).length,
      overLimit: closed.filter((ms) => ms > limitMs).length,
    };
    for (const r of mine) for (const response of r.result.responses) assert.equal(response.status, 408, `${kind}: only 408 answers`);
  }
  const figures = {
    requestTimeoutMs: T,
    slowConnections: byKind,
    normalBefore: { requests: baseline.ms.length, p50Ms: quantile(baseline.ms, 0.5), p99Ms: quantile(baseline.ms, 0.99) },
    normalDuring: { requests: normal.ms.length, p50Ms: quantile(normal.ms, 0.5), p99Ms: quantile(normal.ms, 0.99), maxMs: quantile(normal.ms, 1), failed: normal.failed },
    peakRssMiB: peak / MiB,
  };
  report(t, 'slow-clients/sqlite', figures);

  for (const [kind, k] of Object.entries(byKind)) assert.equal(k.overLimit, 0, `${kind}: every slow connection cut in time (${k.closedMaxMs} ms)`);
  assert.equal(byKind.headers!.answered408, options.slowHeaders, 'every trickling request heard 408 problem+json');
  assert.equal(byKind.body!.answered408, options.slowBodies, 'every trickling body heard 408 problem+json');
  assert.deepEqual(Object.fromEntries(normal.failed), {}, 'normal clients never failed');
  const latencyLimit = Math.max(options.latencyFloorMs, options.latencyFactor * quantile(baseline.ms, 0.99));
  assert.ok(normal.ms.length > 0, 'normal clients were served during the attack');
  assert.ok(quantile(normal.ms, 0.99) <= latencyLimit, `normal clients kept their latency: p99 ${quantile(normal.ms, 0.99).toFixed(0)} ms, limit ${latencyLimit.toFixed(0)} ms`);
}
