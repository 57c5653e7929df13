/**
 * The inventory catch-up's cost on the reference mix, without HTTP: `node dist/bench/inventory-catchup.js
 * [events] [units per catch-up] [sqlite|postgres URL] [seqs per step]`. Commits the batch stream's events (same
 * generator as the batch phases: 5% up to an hour late) in 1,000-event units through the product's
 * store, one after another, and applies the inventory after every few units as the job owner does;
 * prints the process CPU (all threads: the SQLite writer is one) per stored event spent in the commits
 * and in the catch-ups, and the catch-ups' wall time (on PostgreSQL most of their work is the server's). Run it from two builds in turn to compare them (docs/BENCHMARKS.md).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { SETTINGS } from '../src/config.js';
import type { EventRecord, NormalizedEvent } from '../src/events/catalogue.js';
import { createEventValidator } from '../src/events/validate.js';
import type { Store } from '../src/store/types.js';
import { batchBodies, eventIdSource, MIX_SEED } from './mix.js';

const [count = '60000', every = '5', backend = 'sqlite', span] = process.argv.slice(2);
const now = Math.floor(Date.now() / 1000);
const validator = createEventValidator({ maxFutureSeconds: SETTINGS.maxFutureSeconds.default, maxExtraBytes: SETTINGS.maxExtraBytes.default });
const templates = batchBodies(200, 1000, now, MIX_SEED + 2);
const nextId = eventIdSource('catchup');
const events: EventRecord[] = [];
for (let t = 0; events.length < Number(count); t = (t + 1) % templates.length) {
  for (const wire of JSON.parse(templates[t]!.build(nextId)) as unknown[]) {
    const result = validator.validate(wire, now);
    if (result.ok) events.push(result.event);
  }
}

let store: Store;
if (backend === 'sqlite') {
  const { openSqliteStore } = await import('../src/store/sqlite/index.js');
  store = await openSqliteStore({ path: join(mkdtempSync(join(tmpdir(), 'bm-catchup-')), 'bucketmeter.db'), logger: pino({ level: 'silent' }), ...(span === undefined ? {} : { catchUpSpan: Number(span) }) });
} else {
  const { openPostgresStore } = await import('../src/store/postgres/index.js');
  store = await openPostgresStore({ url: backend, ...(span === undefined ? {} : { catchUpSpan: Number(span) }) });
}
const { tenantId } = await store.keys.create({ id: `key_catchup_${process.pid}`, tenantName: `catchup-${process.pid}-${now}`, hash: Buffer.alloc(32), createdAt: now });
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
let commitCpu = 0;
let catchUpCpu = 0;
let catchUpWall = 0;
for (let i = 0, unit = 1; i < events.length; i += 1000, unit++) {
  let before = cpu();
  await store.commit({ events: events.slice(i, i + 1000).map((event) => ({ tenantId, receivedAt: now, event: event as NormalizedEvent })), quarantine: [] });
  commitCpu += cpu() - before;
  if (unit % Number(every) === 0) {
    before = cpu();
    const started = performance.now();
    await store.inventory.catchUp();
    catchUpCpu += cpu() - before;
    catchUpWall += (performance.now() - started) * 1000;
  }
}
const perEvent = (us: number) => Number((us / events.length).toFixed(1));
process.stdout.write(`${JSON.stringify({ events: events.length, commitCpuUsPerEvent: perEvent(commitCpu), catchUpCpuUsPerEvent: perEvent(catchUpCpu), catchUpWallUsPerEvent: perEvent(catchUpWall) })}\n`);
await store.close();
