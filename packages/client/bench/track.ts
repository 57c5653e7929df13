/**
 * One process tracking events as fast as it can to a bucketmeter (bench/run.ts starts it):
 *   node track.js <url> <key> <count> <keys>   → prints {events, seconds, eventsPerSecond, peakRssMB, cpuSeconds, cpuMicrosPerEvent, stats}
 * <keys>: `distinct`, every event a new object key (the server's worst case: a new key id per event);
 * or `working-set`, keys drawn from 50,000 objects, Zipf 0.9, as in the reference event mix
 * (docs/BENCHMARKS.md): reads of the same objects repeat, as in an application's traffic.
 */
import { BucketmeterClient } from '../src/index.js';

const [url, apiKey, countText, keys = 'distinct'] = process.argv.slice(2);
const total = Number(countText);

/** Object indexes drawn ahead with the reference mix's own generator (seeded), so drawing costs the loop nothing. */
async function workingSet(): Promise<Uint32Array> {
  const mix = new URL('../../../../dist/bench/mix.js', import.meta.url);
  const { Rng, Zipf, MIX_SEED } = (await import(mix.href)) as {
    Rng: new (seed: number) => unknown;
    Zipf: new (n: number, exponent: number, rng: unknown) => { next(): number };
    MIX_SEED: number;
  };
  // As the mix draws object keys: 50,000 objects, Zipf 0.9.
  const objects = new Zipf(50_000, 0.9, new Rng(MIX_SEED));
  return Uint32Array.from({ length: 1 << 16 }, () => objects.next());
}
const picks = keys === 'working-set' ? await workingSet() : undefined;
const objectOf = (i: number) => (picks === undefined ? i : picks[i & 0xffff]!);

let peakRss = process.memoryUsage().rss;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
const meter = new BucketmeterClient({ url: url!, apiKey, exitHooks: false });
const cpu0 = process.cpuUsage();
const t0 = performance.now();
let i = 0;
while (i < total) {
  // Track as fast as possible, yielding so the sender runs; hold back when 20,000 wait (twenty
  // batches), so that the figure is what gets delivered, with nothing dropped.
  for (const end = Math.min(total, i + 2000); i < end; i++) {
    const n = objectOf(i);
    meter.track({ action: 'GetObject', provider: 'aws', bucket: 'media', objectKey: `users/${n % 5000}/photo-${n}.jpg`, bytes: 1000 + (i % 9000), customerId: `cus_${i % 100}`, featureId: 'gallery' });
  }
  while (meter.stats().queued > 20_000) await new Promise((r) => setTimeout(r, 1));
  await new Promise((r) => setImmediate(r));
}
await meter.flush();
const seconds = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
const stats = await meter.close();
clearInterval(sampler);
peakRss = Math.max(peakRss, process.memoryUsage().rss);
console.log(JSON.stringify({ keys, events: total, seconds: +seconds.toFixed(2), eventsPerSecond: Math.round(stats.sent / seconds), peakRssMB: Math.round(peakRss / 1024 / 1024), cpuSeconds: +((cpu.user + cpu.system) / 1e6).toFixed(2), cpuMicrosPerEvent: +((cpu.user + cpu.system) / total).toFixed(2), stats }));
