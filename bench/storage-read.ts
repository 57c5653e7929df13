/**
 * The stored-bytes read (InventoryStore.storage, what `GET /v1/usage?storage=true` adds) of this
 * build against another build's, on one kept store, interleaved run by run (same load for both), and
 * their answers compared:
 *
 *   node dist/bench/storage-read.js --base DIR (--sqlite FILE | --database-url URL) --now EPOCH [--runs 7]
 *
 * DIR is a built checkout (its dist/ beside node_modules); --now the end of the store's 30 days (the
 * usage loader's `now`, in its load.json). The store must have this build's schema (open it with this
 * build once): the other build reads only what it knows. The queries are the bench's usage-query
 * storage ones (run.ts USAGE_QUERIES), at the store level: no HTTP, no request measures.
 */
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { StorageStoreQuery, StorageWindowSums } from '../src/store/types.js';
import { median } from './stats.js';

const { values } = parseArgs({
  options: { base: { type: 'string' }, sqlite: { type: 'string' }, 'database-url': { type: 'string' }, now: { type: 'string' }, runs: { type: 'string', default: '7' } },
});
if (values.base === undefined || values.now === undefined || (values.sqlite === undefined) === (values['database-url'] === undefined)) {
  throw new Error('usage: storage-read --base DIR (--sqlite FILE | --database-url URL) --now EPOCH [--runs N]');
}
const ROOT = resolve(import.meta.dirname, '../..');
const runs = Number(values.runs);

interface Reader {
  storage(tenantId: number, q: StorageStoreQuery): StorageWindowSums[] | Promise<StorageWindowSums[]>;
}

const pool = values['database-url'] === undefined ? undefined : new pg.Pool({ connectionString: values['database-url'], max: 2 });
const db = values.sqlite === undefined ? undefined : new Database(values.sqlite, { readonly: true });

/** The inventory reader of the build at `root`, on the store. */
async function readerOf(root: string): Promise<Reader> {
  if (db !== undefined) {
    const { InventoryReader } = await import(pathToFileURL(join(root, 'dist/src/store/sqlite/inventory.js')).href);
    return new InventoryReader(db) as Reader;
  }
  const { PostgresInventory } = await import(pathToFileURL(join(root, 'dist/src/store/postgres/inventory.js')).href);
  return new PostgresInventory(pool, <T>(run: () => Promise<T>) => run()) as Reader;
}

async function main(): Promise<void> {
  const builds = [
    { name: 'base', reader: await readerOf(resolve(values.base!)) },
    { name: 'this', reader: await readerOf(ROOT) },
  ];
  const tenant = db !== undefined
    ? (db.prepare('SELECT tenant FROM inventory_hours LIMIT 1').pluck().get() as number)
    : Number((await pool!.query<{ tenant: number }>('SELECT tenant FROM inventory_hours LIMIT 1')).rows[0]!.tenant);
  const to = Number(values.now) / 3600;
  const from = to - 30 * 24;
  const days = Array.from({ length: 31 }, (_, i) => from + i * 24);
  const queries: { name: string; q: StorageStoreQuery }[] = [
    { name: 'none, no groupBy', q: { bounds: [from, to], groupBy: [], filters: {} } },
    { name: 'day, groupBy provider', q: { bounds: days, groupBy: ['provider'], filters: {} } },
    { name: 'none, groupBy customerId', q: { bounds: [from, to], groupBy: ['customerId'], filters: {} } },
    { name: 'none, groupBy bucket', q: { bounds: [from, to], groupBy: ['bucket'], filters: {} } },
    { name: 'none, groupBy clientId (the full shape either way)', q: { bounds: [from, to], groupBy: ['clientId'], filters: {} } },
    // The opening (every delta before the first window) holds the other 23 days.
    { name: 'last 7 days, groupBy customerId', q: { bounds: [to - 7 * 24, to], groupBy: ['customerId'], filters: {} } },
  ];
  const lines = (sums: StorageWindowSums[]) => sums.map((r) => `${r.window}|${JSON.stringify(r.values)}|${r.sums.join(',')}`).sort();
  process.stdout.write(`| storage read, 30 days | base p50 ms | this p50 ms | ratio | groups × windows |\n|---|--:|--:|--:|--:|\n`);
  for (const { name, q } of queries) {
    const times = new Map(builds.map((b) => [b.name, [] as number[]]));
    const answers = new Map<string, string[]>();
    for (let run = 0; run < runs + 2; run++) {
      // Alternate which build goes first, so neither always reads after the other warmed the cache.
      for (const b of run % 2 === 0 ? builds : [...builds].reverse()) {
        const started = process.hrtime.bigint();
        const answer = await b.reader.storage(tenant, q);
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        if (run >= 2) times.get(b.name)!.push(ms);
        answers.set(b.name, lines(answer));
      }
    }
    assert.deepEqual(answers.get('this'), answers.get('base'), `${name}: the two builds answer differently`);
    const base = median(times.get('base')!);
    const mine = median(times.get('this')!);
    process.stdout.write(`| ${name} | ${base.toFixed(1)} | ${mine.toFixed(1)} | ${(base / mine).toFixed(1)}× | ${answers.get('this')!.length} |\n`);
  }
}

main()
  .finally(async () => {
    db?.close();
    await pool?.end();
  })
  .catch((error: unknown) => {
    process.stderr.write(`storage-read failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
