/**
 * One process tracking events as fast as it can to a bucketmeter (bench/run.ts starts it):
 *   node track.js <url> <key> <count>   → prints {events, seconds, eventsPerSecond, peakRssMB, cpuSeconds, cpuMicrosPerEvent, stats}
 */
import { BucketmeterClient } from '../src/index.js';

const [url, apiKey, countText] = process.argv.slice(2);
const total = Number(countText);
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
    meter.track({ action: 'GetObject', provider: 'aws', bucket: 'media', objectKey: `users/${i % 5000}/photo-${i}.jpg`, bytes: 1000 + (i % 9000), customerId: `cus_${i % 100}`, featureId: 'gallery' });
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
console.log(JSON.stringify({ events: total, seconds: +seconds.toFixed(2), eventsPerSecond: Math.round(stats.sent / seconds), peakRssMB: Math.round(peakRss / 1024 / 1024), cpuSeconds: +((cpu.user + cpu.system) / 1e6).toFixed(2), cpuMicrosPerEvent: +((cpu.user + cpu.system) / total).toFixed(2), stats }));
