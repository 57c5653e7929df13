/**
 * The usage fold's CPU on fixed work: the reference mix's batch-of-1,000 events (bench/raw-insert.ts'
 * rows) committed through the SQLite store in 1,000-event units, 4 in flight, folded every `--fold-every`
 * events as the job owner's catch-up would (4 times a second at ~100k events/s: 25,000), then to the end.
 * Prints process CPU (every thread) per event while committing, and during the folds (the main thread
 * waits then: the writer's), with usage on and off.
 *
 *   node dist/bench/fold-cpu.js [--events 200000] [--fold-every 25000] [--runs 3]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { SETTINGS } from '../src/config.js';
import type { NormalizedEvent } from '../src/events/catalogue.js';
import { createEventValidator } from '../src/events/validate.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import type { CommitUnit } from '../src/store/types.js';
import { batchBodies, eventIdSource } from './mix.js';
import { STREAMS } from './phases.js';

const { values } = parseArgs({ options: { events: { type: 'string', default: '200000' }, 'fold-every': { type: 'string', default: '25000' }, runs: { type: 'string', default: '3' } } });
const EVENTS = Number(values.events);
const FOLD_EVERY = Number(values['fold-every']);
const NOW = Math.floor(Date.now() / 1000);

function referenceEvents(): NormalizedEvent[] {
  const validator = createEventValidator({ maxFutureSeconds: SETTINGS.maxFutureSeconds.default, maxExtraBytes: SETTINGS.maxExtraBytes.default });
  const { batch, pool, seed } = STREAMS.batch1000;
  const templates = batchBodies(pool, batch, NOW, seed);
  const nextId = eventIdSource(`fold${process.pid}`);
  const events: NormalizedEvent[] = [];
  for (let t = 0; events.length < EVENTS; t = (t + 1) % templates.length) {
    for (const wire of JSON.parse(templates[t]!.build(nextId)) as unknown[]) {
      const result = validator.validate(wire, NOW);
      if (!result.ok) throw new Error(`reference event rejected: ${JSON.stringify(result.errors)}`);
      events.push(result.event as NormalizedEvent);
      if (events.length === EVENTS) break;
    }
  }
  return events;
}

const cpu = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

async function run(events: NormalizedEvent[], usage: boolean): Promise<{ commit: number; fold: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'bm-fold-cpu-'));
  try {
    const store = await openSqliteStore({ path: join(dir, 'bucketmeter.db'), logger: pino({ level: 'silent' }), usage });
    const units: CommitUnit[] = [];
    for (let from = 0; from < events.length; from += 1000) {
      units.push({ events: events.slice(from, from + 1000).map((event) => ({ tenantId: 1, receivedAt: NOW, event })), quarantine: [] });
    }
    let commitCpu = 0;
    let foldCpu = 0;
    for (let from = 0; from < units.length; from += FOLD_EVERY / 1000) {
      const slice = units.slice(from, from + FOLD_EVERY / 1000);
      let next = 0;
      const lane = async () => {
        while (next < slice.length) await store.commit(slice[next++]!);
      };
      const a = cpu();
      await Promise.all(Array.from({ length: 4 }, lane));
      const b = cpu();
      await store.usage.catchUp();
      commitCpu += b - a;
      foldCpu += cpu() - b;
    }
    await store.close();
    return { commit: commitCpu / events.length, fold: foldCpu / events.length };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const events = referenceEvents();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const usage of [true, false]) {
  const results = [];
  for (let r = 0; r < Number(values.runs); r++) results.push(await run(events, usage));
  const commit = median(results.map((x) => x.commit));
  const fold = median(results.map((x) => x.fold));
  process.stdout.write(`usage ${usage ? 'on ' : 'off'}: CPU µs/event commit ${commit.toFixed(2)} + fold ${fold.toFixed(2)} = ${(commit + fold).toFixed(2)} (runs ${results.map((x) => (x.commit + x.fold).toFixed(2)).join(', ')})\n`);
}
