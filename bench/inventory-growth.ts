/**
 * The inventory catch-up's cost as the store's history grows: `node dist/bench/inventory-growth.js
 * [events] [chunk] [late|spread] [sqlite|postgres URL]`. Commits the reference mix's events (bench/mix.ts)
 * through the product's store in 10,000-event units and catches the inventory up after every `chunk`
 * events, as the bulk loaders do; prints one line per catch-up: the events stored so far, the
 * catch-up's process CPU (all threads: the SQLite writer is one) and wall time per event of its chunk,
 * and the process RSS. `late`: time advances over 30 days across the whole load and each event keeps
 * the mix's own lateness (seconds, 5% up to an hour); `spread`: each event's time is drawn over the 30
 * days (bench/usage-query.ts's loader, where every chunk reaches back to the start).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { SETTINGS } from '../src/config.js';
import type { NormalizedEvent } from '../src/events/catalogue.js';
import { createEventValidator } from '../src/events/validate.js';
import type { Store } from '../src/store/types.js';
import { buildUniverse, EventMix, MIX_SEED, Rng } from './mix.js';

const [count = '1000000', chunk = '100000', mode = 'late', backend = 'sqlite'] = process.argv.slice(2);
const total = Number(count);
const UNIT = 10_000;
const DAYS = 30;
const now = Math.floor(Date.now() / 1000);
const start = now - DAYS * 86400;
const mix = new EventMix(buildUniverse(), now);
const rng = new Rng(MIX_SEED + 7);
const validator = createEventValidator({ maxFutureSeconds: SETTINGS.maxFutureSeconds.default, maxExtraBytes: SETTINGS.maxExtraBytes.default });

let store: Store;
const dir = backend === 'sqlite' ? mkdtempSync(join(tmpdir(), 'bm-growth-')) : undefined;
if (dir !== undefined) {
  const { openSqliteStore } = await import('../src/store/sqlite/index.js');
  store = await openSqliteStore({ path: join(dir, 'bucketmeter.db'), logger: pino({ level: 'silent' }) });
} else {
  const { openPostgresStore } = await import('../src/store/postgres/index.js');
  store = await openPostgresStore({ url: backend });
}
const { tenantId } = await store.keys.create({ id: `key_growth_${process.pid}`, tenantName: `growth-${process.pid}-${now}`, hash: Buffer.alloc(32), createdAt: now });
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
for (let done = 0; done < total; ) {
  const events: NormalizedEvent[] = [];
  for (; events.length < UNIT && done < total; done++) {
    const wire = mix.nextEvent();
    delete wire.eventId;
    const lateness = now - Math.floor(Date.parse(wire.timestamp as string) / 1000);
    const at = mode === 'spread' ? start + Math.floor(rng.next() * DAYS * 86400) : start + Math.floor((done / total) * DAYS * 86400) - lateness;
    wire.timestamp = new Date(at * 1000).toISOString();
    const result = validator.validate(wire, now);
    if (!result.ok) throw new Error(`reference event rejected: ${JSON.stringify(result.errors)}`);
    events.push(result.event);
  }
  await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: now, event })), quarantine: [] });
  if (done % Number(chunk) === 0 || done === total) {
    const before = cpu();
    const started = performance.now();
    await store.inventory.catchUp();
    const wall = (performance.now() - started) * 1000;
    const n = done % Number(chunk) === 0 ? Number(chunk) : done % Number(chunk);
    const line = { events: done, catchUpCpuUsPerEvent: Number(((cpu() - before) / n).toFixed(1)), catchUpWallUsPerEvent: Number((wall / n).toFixed(1)), rssMb: Math.round(process.memoryUsage().rss / 2 ** 20) };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  }
}
await store.close();
// Hundreds of MB at a million events.
if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
