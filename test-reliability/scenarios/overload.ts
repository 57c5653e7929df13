/**
 * Overload: capacity is measured first (closed loop), then batches are offered at `factor` times that
 * rate (open loop) for a while. The excess must be refused at once with 503 + Retry-After, every
 * acknowledged event must be durable (in the files after a SIGKILL), memory must stay bounded, and
 * throughput must be back to normal within 5 s of the load dropping.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { Pool } from 'undici';
import { createKey, startServer } from '../../test/support/server.js';
import { BatchLoad } from '../support/batches.js';
import type { Outcome } from '../support/batches.js';
import { MiB, quantile, report, sampleRss } from '../support/measure.js';
import { eachStoredEventId, serverOptions, storeArgs } from '../support/stores.js';
import type { StoreTarget } from '../support/stores.js';

export interface OverloadOptions {
  target: StoreTarget;
  queueMaxEvents: number;
  batchSize: number;
  /** Clients of the closed loop that measures capacity (and recovery). */
  clients: number;
  measureSeconds: number;
  overloadSeconds: number;
  factor: number;
  /** Most requests the open loop keeps waiting at once. */
  maxInFlight: number;
  /** Peak RSS allowed, in bytes: absolute, and above the RSS reached at capacity. */
  maxRss: number;
  maxRssGrowth: number;
  /** Slowest refusal allowed at the 99th percentile: the excess must be refused at once. */
  maxRefusalP99Ms: number;
  /**
   * Also assert what depends on the machine's speed: that the load generator reached 2.5× capacity,
   * refusals at once, recovery within 5 s, memory bounds. The full suite does; the short run in
   * `npm test` shares 2 cores with other test files, so its load generator may not keep up, and it
   * asserts only what must hold whatever the load reached: nothing lost, doubled or invented, every
   * request answered, every refusal a 503/429 with Retry-After, the server serving again after.
   */
  machineSpeed: boolean;
}

const TENANT = 'overload';
/** Throughput counts as back to normal at this share of the measured capacity. */
const NORMAL = 0.75;
const RECOVERY_SECONDS = 8;
/** The overload counts as offered when the server answered at least this multiple of its capacity. */
const MIN_ANSWERED_FACTOR = 2.5;

export async function overloadScenario(t: TestContext, options: OverloadOptions): Promise<void> {
  const { target, batchSize } = options;
  const key = await createKey(TENANT, storeArgs(target));
  const server = await startServer(serverOptions(target, ['--queue-max-events', String(options.queueMaxEvents)]));
  t.after(() => server.kill());
  const pool = new Pool(server.url, { connections: options.maxInFlight, pipelining: 1, headersTimeout: 60_000, bodyTimeout: 60_000 });
  const load = new BatchLoad(pool, key, `ov${Date.now()}`, batchSize);
  const rss = sampleRss(server.child.pid!);
  t.after(() => rss.stop());

  // Capacity, after a warm-up second.
  let measuring = false;
  let measured = 0;
  const warmUntil = Date.now() + 1000;
  const measureUntil = warmUntil + options.measureSeconds * 1000;
  await load.closedLoop(options.clients, () => Date.now() >= measureUntil, (o) => {
    if (o.status === 200 && measuring) measured++;
    measuring ||= Date.now() >= warmUntil;
  });
  const capacityRps = measured / options.measureSeconds;
  const refusedAtCapacity = load.statuses.get(503) ?? 0;
  const rssAtCapacity = rss.peak;

  // Overload: factor × capacity, open loop.
  const overload: Outcome[] = [];
  const offeredRps = options.factor * capacityRps;
  const overloadStart = performance.now();
  const { offered, notSent, answered } = await load.openLoop(offeredRps, options.overloadSeconds, options.maxInFlight, (o) => overload.push(o));
  const dropped = performance.now();

  // Recovery: the normal load again, as soon as the overload stops.
  const windows = Array.from({ length: RECOVERY_SECONDS }, () => 0);
  const recoveryUntil = Date.now() + RECOVERY_SECONDS * 1000;
  await load.closedLoop(options.clients, () => Date.now() >= recoveryUntil, (o) => {
    const second = Math.floor((o.at - dropped) / 1000);
    if (o.status === 200 && second < RECOVERY_SECONDS) windows[second]!++;
  });
  await answered;
  await pool.close();
  const peak = rss.stop();
  // Durability must not rest on a graceful stop: the audit below reads the files a killed server left.
  await server.kill();

  // Durability: every acknowledged batch stored whole, once; nothing stored that was not sent.
  const seen = new Map<number, Uint8Array>();
  let stored = 0;
  let doubled = 0;
  let unsent = 0;
  await eachStoredEventId(target, TENANT, (id) => {
    stored++;
    const n = load.requestOf(id);
    if (n === undefined || !load.sent.has(n)) {
      unsent++;
      return;
    }
    let bits = seen.get(n);
    if (bits === undefined) {
      bits = new Uint8Array(batchSize);
      seen.set(n, bits);
    }
    const i = Number(id.slice(id.lastIndexOf('-') + 1));
    if (bits[i] === 1) doubled++;
    bits[i] = 1;
  });
  let lost = 0;
  for (const n of load.acknowledged) lost += batchSize - (seen.get(n)?.reduce((a, b) => a + b, 0) ?? 0);

  const overloadSeconds = (dropped - overloadStart) / 1000;
  const ok = overload.filter((o) => o.status === 200);
  const refused = overload.filter((o) => o.status !== 200);
  // What reached the server, from its answers: what the client meant to send proves nothing.
  const answeredRps = overload.filter((o) => o.at >= overloadStart && o.at <= dropped).length / overloadSeconds;
  const malformed = refused.filter((o) => !(o.status === 503 || o.status === 429) || !o.retryAfter);
  const recoveredAfter = windows.findIndex((n) => n >= NORMAL * capacityRps) + 1;
  const figures = {
    queueMaxEvents: options.queueMaxEvents,
    batchSize,
    capacityRps,
    capacityEventsPerSecond: capacityRps * batchSize,
    refusedAtCapacity,
    offeredRps,
    overloadSeconds: options.overloadSeconds,
    offered,
    notSentClientFull: notSent,
    answeredRps,
    answeredFactor: answeredRps / capacityRps,
    statuses: load.statuses,
    codes: load.codes,
    overloadAcceptedRps: ok.length / overloadSeconds,
    p99AcceptedMs: quantile(ok.map((o) => o.ms), 0.99),
    p50RefusedMs: quantile(refused.map((o) => o.ms), 0.5),
    p99RefusedMs: quantile(refused.map((o) => o.ms), 0.99),
    recoveryRpsBySecond: windows,
    backToNormalWithinS: recoveredAfter === 0 ? null : recoveredAfter,
    eventsAcknowledged: load.acknowledged.size * batchSize,
    eventsStored: stored,
    lost,
    doubled,
    unsent,
    networkErrors: load.networkErrors,
    rssAtCapacityMiB: rssAtCapacity / MiB,
    peakRssMiB: peak / MiB,
  };
  report(t, `overload/${target.backend}`, figures);

  assert.equal(lost, 0, 'acknowledged events lost');
  assert.equal(doubled, 0, 'events stored twice');
  assert.equal(unsent, 0, 'events stored that were never sent');
  assert.equal(load.networkErrors, 0, 'every request answered');
  assert.deepEqual(load.failures, [], 'every answer as it must be');
  assert.deepEqual(malformed.slice(0, 5), [], 'every refusal is 503 or 429 with Retry-After');
  assert.ok(windows.some((n) => n > 0), `the server serves again after the overload: ${windows.join(', ')} per second`);
  if (!options.machineSpeed) return;
  assert.ok(
    answeredRps >= MIN_ANSWERED_FACTOR * capacityRps,
    `the overload reached the server: ${answeredRps.toFixed(0)} answers/s, not ${MIN_ANSWERED_FACTOR}× the capacity of ${capacityRps.toFixed(0)}/s (${notSent} of ${offered} not even sent)`,
  );
  assert.ok(refused.length > 0, 'the overload was refused in part');
  // A few refused client-side (too many waiting) is the client's own hiccup; many would mean the server stalled.
  assert.ok(notSent <= offered * 0.05, `the overload was offered: ${notSent} of ${offered} could not even be sent`);
  const refusedP99 = quantile(refused.map((o) => o.ms), 0.99);
  assert.ok(refusedP99 < options.maxRefusalP99Ms, `the excess is refused at once: p99 ${refusedP99.toFixed(0)} ms, limit ${options.maxRefusalP99Ms} ms`);
  assert.ok(peak < options.maxRss, `peak RSS ${Math.round(peak / MiB)} MiB under ${Math.round(options.maxRss / MiB)} MiB`);
  assert.ok(
    peak <= rssAtCapacity + options.maxRssGrowth,
    `peak RSS ${Math.round(peak / MiB)} MiB at most ${Math.round(options.maxRssGrowth / MiB)} MiB above the ${Math.round(rssAtCapacity / MiB)} MiB at capacity`,
  );
  assert.ok(recoveredAfter > 0 && recoveredAfter <= 5, `throughput back to ${NORMAL * 100}% of capacity within 5 s: ${windows.join(', ')} per second vs ${capacityRps.toFixed(0)}`);
}
