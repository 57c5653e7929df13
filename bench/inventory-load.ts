/**
 * The inventory query phase's loader, run by run.ts as a child: `versions` PutObject events of
 * distinct keys (so as many live versions), over `days` days before `now` in timestamp order, in
 * 10,000-event units through the product's store, the inventory applied after each unit as the job
 * owner does; then one key for the tenant. Prints the key and the bucket the listing asks for.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { generateKey } from '../src/auth/keys.js';
import { SETTINGS } from '../src/config.js';
import type { NormalizedEvent } from '../src/events/catalogue.js';
import type { Store } from '../src/store/types.js';

export interface InventoryLoadSpec {
  backend: 'sqlite' | 'postgres';
  dir?: string;
  url?: string;
  versions: number;
  days: number;
  now: number;
}

export interface InventoryLoadResult {
  versions: number;
  seconds: number;
  key: string;
  bucket: string;
}

const UNIT = 10_000;
const BUCKETS = 20;
const CUSTOMERS = 200;

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as InventoryLoadSpec;
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
  const start = spec.now - spec.days * 86400;
  const step = (spec.days * 86400) / spec.versions;
  const started = Date.now();
  for (let done = 0; done < spec.versions; ) {
    const events: NormalizedEvent[] = [];
    for (; events.length < UNIT && done < spec.versions; done++) {
      events.push({
        action: 'PutObject',
        timestamp: Math.floor(start + done * step),
        provider: 'wasabi',
        bucket: `bucket-${done % BUCKETS}`,
        objectKey: `photos/${(done * 7919) % spec.versions}.jpg`,
        bytes: 1000 + (done % 5000) * 100,
        customerId: `cus_${done % CUSTOMERS}`,
      } as NormalizedEvent);
    }
    await store.commit({ events: events.map((event) => ({ tenantId, receivedAt: spec.now, event })), quarantine: [] });
    await store.inventory.catchUp();
  }
  const seconds = (Date.now() - started) / 1000;
  await store.close();
  const result: InventoryLoadResult = { versions: spec.versions, seconds, key: generated.key, bucket: 'bucket-0' };
  process.stdout.write(`BENCH ${JSON.stringify({ event: 'result', result })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`inventory load failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
