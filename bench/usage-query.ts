/**
 * The usage query phase's loader, run by run.ts as a child: `events` events of the reference mix
 * over `days` days before `now`, arriving as a running server receives them (time advancing evenly,
 * each event a few seconds old when committed), committed through the product's
 * store in 10,000-event units, the rollups folded and the inventory caught up every 100,000 events;
 * then one key for the tenant. Prints
 * the key and the hottest customer (the one the filtered query asks for).
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { generateKey } from '../src/auth/keys.js';
import { SETTINGS } from '../src/config.js';
import type { NormalizedEvent } from '../src/events/catalogue.js';
import { createEventValidator } from '../src/events/validate.js';
import type { CommitUnit, Store } from '../src/store/types.js';
import { buildUniverse, EventMix, MIX_SEED, Rng } from './mix.js';

export interface UsageLoadSpec {
  backend: 'sqlite' | 'postgres';
  dir?: string;
  url?: string;
  events: number;
  days: number;
  /** Unix seconds; a whole day. */
  now: number;
}

export interface UsageLoadResult {
  events: number;
  seconds: number;
  key: string;
  hotCustomer: string;
}

const UNIT = 10_000;

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as UsageLoadSpec;
  let store: Store;
  if (spec.backend === 'sqlite') {
    const { openSqliteStore } = await import('../src/store/sqlite/index.js');
    store = await openSqliteStore({ path: join(spec.dir!, 'bucketmeter.db'), logger: pino({ level: 'silent' }) });
  } else {
    const { openPostgresStore } = await import('../src/store/postgres/index.js');
    store = await openPostgresStore({ url: spec.url!, poolMax: SETTINGS.pgPoolMax.default });
  }
  const generated = generateKey();
  const { tenantId } = await store.keys.create({ id: generated.id, tenantName: 'bench', hash: generated.hash, createdAt: spec.now });
  const universe = buildUniverse();
  const mix = new EventMix(universe, spec.now);
  const rng = new Rng(MIX_SEED + 7);
  const validator = createEventValidator({ maxFutureSeconds: SETTINGS.maxFutureSeconds.default, maxExtraBytes: SETTINGS.maxExtraBytes.default });
  const start = spec.now - spec.days * 86400;
  const started = Date.now();
  const pending: Promise<unknown>[] = [];
  for (let done = 0; done < spec.events; ) {
    const events: NormalizedEvent[] = [];
    for (; events.length < UNIT && done < spec.events; done++) {
      const wire = mix.nextEvent();
      delete wire.eventId;
      // In arrival order: late and shuffled arrival are the suites' and inventory-growth.ts's concern,
      // and a history of 30 days replayed in random order would time the catch-up, not the queries.
      const arrival = start + Math.floor((done / spec.events) * spec.days * 86400);
      wire.timestamp = new Date(Math.max(start, arrival - Math.floor(rng.exp(5))) * 1000).toISOString();
      const result = validator.validate(wire, spec.now);
      if (!result.ok) throw new Error(`reference event rejected: ${JSON.stringify(result.errors)}`);
      events.push(result.event);
    }
    const unit: CommitUnit = { events: events.map((event) => ({ tenantId, receivedAt: spec.now, event })), quarantine: [] };
    pending.push(store.commit(unit));
    if (pending.length >= 3) await pending.shift();
    // What a running server's background jobs do as events come in: the answers are then timed on a
    // store with nothing left to fold or catch up, not on one cold from a bulk load.
    if ((done / UNIT) % 10 === 0) await Promise.all([...pending.splice(0), store.usage.catchUp(), store.inventory.catchUp()]);
  }
  await Promise.all(pending);
  await store.usage.catchUp();
  await store.inventory.catchUp();
  const seconds = (Date.now() - started) / 1000;
  await store.close();
  const result: UsageLoadResult = { events: spec.events, seconds, key: generated.key, hotCustomer: universe.customers[0]! };
  process.stdout.write(`BENCH ${JSON.stringify({ event: 'result', result })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`usage load failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
