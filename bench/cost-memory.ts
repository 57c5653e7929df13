/**
 * The cost thread's memory figures (src/costs/service.ts COST_BYTES), on a synthetic SQLite month:
 * `keys` customers, each reading in `hours` hours of March 2026 (a usage row each) and storing
 * `puts` objects (each an inventory delta and a run of stored bytes), half of them deleted later.
 * - `build <dir> <keys> <hours> <puts>`: writes the store (tenant 1's key printed).
 * - `kept <dir> [quantities]` (run with --expose-gc): March priced in-process, the heap and the typed arrays
 *   (process.memoryUsage().arrayBuffers) after collections, with the month held and once dropped:
 *   bytes per kept fine row; the typed arrays' most while pricing (sampled where it polls for its
 *   caller leaving) per quantity; then 8 hourly groupBy=customerId answers of March's first day
 *   (24 hours, 23, ...) kept, each as its month's groups and as a whole answer: bytes per answer row
 *   and its group. `quantities` (optional): the month's, when known (else found by bisecting the bound).
 * - `need <dir> <mb>`: prices March on the real cost thread (CostThread) with --cost-heap-mb `mb`
 *   and the bounds derived from it; prints whether it fitted and the process's peak resident memory.
 * - `price <dir>` (run with --max-old-space-size): March priced in-process with the bounds lifted,
 *   what a V8 heap of that size holds without them; a process that runs out of heap did not fit.
 * - `month <db> <tenant> <now> <month>...` (run with --expose-gc and a large --max-old-space-size):
 *   the months of a real store (e.g. the 10M-event reference mix's October and November) priced
 *   in-process as one request, on the cost thread's read-only reads, bounds lifted: the quantities
 *   the bound counts (each month's), the most live heap and typed arrays between its steps (after
 *   collections; the process's own few MB included), per quantity of the month, and the peak resident
 *   memory. Writes nothing to the store.
 * - `keptmonth <db> <tenant> <now> <month>` (the same flags): one month of a real store priced and
 *   kept, on the same reads: its heap and typed arrays held against dropped, per fine row.
 * - `pair <db> <tenant> <now> <pool> <steps> <month> <month>` (the same flags): two months of a real
 *   store priced at once, as two requests of a month each on a service bounded at `pool` quantities,
 *   not kept, the second asked once the first's pricing has taken `steps` steps (polls of its
 *   request): the most live heap and typed arrays between their steps (after collections), the most
 *   quantities held at once (quantitiesPeak; null where the service has none, before the months
 *   shared the bound) and the time.
 * Prints `BENCH {...}` lines.
 */
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CostService } from '../src/costs/service.js';
import { CostThread } from '../src/costs/thread.js';
import type { NormalizedEvent } from '../src/events/catalogue.js';
import { loadPricing } from '../src/pricing/setup.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import { openThreadReads } from '../src/store/thread-reads.js';
import { parseUsageParams } from '../src/usage/params.js';
import type { UsageRequest } from '../src/usage/params.js';
import { randomBytes } from 'node:crypto';

const MARCH = Date.UTC(2026, 2, 1) / 1000;
const APRIL = Date.UTC(2026, 3, 1) / 1000;
const HOUR = 3600;
const print = (figures: Record<string, unknown>) => process.stdout.write(`BENCH ${JSON.stringify(figures)}\n`);

async function build(dir: string, keys: number, hours: number, puts: number): Promise<void> {
  const store = await openSqliteStore({ path: join(dir, 'cost.db') });
  const key = await store.keys.create({ id: `key_${randomBytes(8).toString('hex')}`, tenantName: 'memory', hash: randomBytes(32), createdAt: MARCH });
  const tenantId = key.tenantId;
  let batch: NormalizedEvent[] = [];
  const flush = async () => {
    await store.commit({ events: batch.map((event) => ({ tenantId, receivedAt: APRIL, event })), quarantine: [] });
    batch = [];
  };
  for (let k = 0; k < keys; k++) {
    const customerId = `customer-${k}`;
    for (let h = 0; h < hours; h++) {
      const hour = (k * 7 + Math.floor((h * 744) / hours)) % 744;
      batch.push({ action: 'GetObject', timestamp: MARCH + hour * HOUR + 5, provider: 'aws', bucket: 'media', objectKey: `o${k}`, bytes: 1000 + h, isBillableEgress: true, customerId } as NormalizedEvent);
    }
    for (let p = 0; p < puts; p++) {
      const at = MARCH + ((k * 13 + p * 97) % 700) * HOUR + 60;
      batch.push({ action: 'PutObject', timestamp: at, provider: 'aws', bucket: 'media', objectKey: `s${k}-${p}`, bytes: 100_000 + p, customerId } as NormalizedEvent);
      if (p % 2 === 1) batch.push({ action: 'DeleteObject', timestamp: at + 20 * HOUR, provider: 'aws', bucket: 'media', objectKey: `s${k}-${p}`, customerId } as NormalizedEvent);
    }
    if (batch.length >= 10_000) await flush();
  }
  await flush();
  await store.close();
  print({ step: 'build', dir, tenantId, keys, hours, puts });
}

const request = (q: number): UsageRequest => ({ from: MARCH, to: MARCH + (24 - q) * HOUR, granularity: 'hour', timeZone: 'UTC', groupBy: ['customerId'], filters: {}, format: 'json', limit: 1e9, storage: false });

/** A full collection (the commands that weigh memory are run with --expose-gc, set here too). */
function gc(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** The live heap and typed arrays, after collections. */
function memory(): { heap: number; arrays: number } {
  for (let i = 0; i < 3; i++) gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, arrays: m.arrayBuffers };
}

async function kept(dir: string, known: number): Promise<void> {
  const store = await openSqliteStore({ path: join(dir, 'cost.db') });
  const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });
  const lifted = { maxKeyHours: 1e12, keptRows: 1e12, maxAnswerRows: 1e9 };
  const quantities = async () => {
    // The month's quantities as the bound counts them: the least bound it fits.
    let low = 0;
    let high = 1 << 21;
    while (low + 1 < high) {
      const mid = Math.floor((low + high) / 2);
      try {
        await new CostService({ usage: store.usage, storage: store.storageFeed, pricing, now: () => APRIL + 86400, keptRows: 0, maxKeyHours: mid }).priceMonth(1, '2026-03');
        high = mid;
      } catch {
        low = mid;
      }
    }
    return high;
  };
  const q = known > 0 ? known : await quantities();
  // The typed arrays' most while pricing, sampled where the pricing polls for its caller leaving.
  let arraysPeak = 0;
  const arraysBase = memory().arrays;
  const heapBase = memory().heap;
  const heapAt: number[] = [];
  const sample = () => {
    arraysPeak = Math.max(arraysPeak, process.memoryUsage().arrayBuffers - arraysBase);
    // The live heap at each checkpoint (where the bound is checked), after collections.
    heapAt.push(Math.round((memory().heap - heapBase) / 2 ** 20));
    return false;
  };
  await new CostService({ usage: store.usage, storage: store.storageFeed, pricing, now: () => APRIL + 86400, ...lifted, keptRows: 0 }).fineRows(1, { from: MARCH, to: APRIL, filters: {} }, sample);
  // The month's weight: the memory with it held, less that once it is dropped (held in an array: a
  // variable not read again may be collected, its register dead).
  const held: unknown[] = [new CostService({ usage: store.usage, storage: store.storageFeed, pricing, now: () => APRIL + 86400, ...lifted, keptAnswerRows: 0 })];
  // In a function: its result no variable of this one may hold past the drop.
  const rows = await (async () => (await (held[0] as CostService).priceMonth(1, '2026-03')).reduce((n, a) => n + a.priced.length, 0))();
  const withMonth = memory();
  held.length = 0;
  const withoutMonth = memory();
  // Kept answers: 8 answers (each a month's groups and its whole answer, as many rows), with the month kept.
  const answers = new CostService({ usage: store.usage, storage: store.storageFeed, pricing, now: () => APRIL + 86400, ...lifted, keptAnswerRows: 1e9 });
  await answers.priceMonth(1, '2026-03');
  const before = memory();
  let answerRows = 0;
  for (let i = 0; i < 8; i++) answerRows += (await answers.query(1, request(i))).rows.length;
  const after = memory();
  print({
    step: 'kept',
    quantities: q,
    pricingArrayBytesPerQuantity: Math.round(arraysPeak / q),
    liveHeapMbAtCheckpoints: heapAt,
    fineRows: rows,
    monthHeapBytesPerRow: Math.round((withMonth.heap - withoutMonth.heap) / rows),
    monthArrayBytesPerRow: Math.round((withMonth.arrays - withoutMonth.arrays) / rows),
    answerRows,
    bytesPerAnswerRowAndItsGroup: Math.round((after.heap - before.heap) / answerRows),
  });
  await store.close();
}

async function need(dir: string, mb: number): Promise<void> {
  const store = await openSqliteStore({ path: join(dir, 'cost.db') });
  const costs = new CostThread(store.threadReads, { prices: undefined, bucketPlans: undefined, costHeapMb: mb });
  const query = parseUsageParams({ from: '2026-03-01T00:00:00Z', to: '2026-04-01T00:00:00Z', granularity: 'none' }, undefined, ['json', 'csv', 'focus']);
  const started = Date.now();
  let fitted = true;
  let detail = '';
  try {
    await costs.page(1, query);
  } catch (err) {
    fitted = false;
    detail = (err as Error).message.slice(0, 120);
  }
  print({ step: 'need', mb, fitted, detail, ms: Date.now() - started, peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024) });
  await costs.close();
  await store.close();
}

async function price(dir: string): Promise<void> {
  const store = await openSqliteStore({ path: join(dir, 'cost.db') });
  const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });
  const started = Date.now();
  const accounts = await new CostService({ usage: store.usage, storage: store.storageFeed, pricing, now: () => APRIL + 86400, maxKeyHours: 1e12, keptRows: 0 }).priceMonth(1, '2026-03');
  const rows = accounts.reduce((n, a) => n + a.priced.length, 0);
  print({ step: 'price', fineRows: rows, ms: Date.now() - started, peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024) });
  await store.close();
}

async function month(path: string, tenantId: number, now: number, months: string[]): Promise<void> {
  const reads = await openThreadReads({ backend: 'sqlite', path, busyTimeoutMs: 5000 }, async () => {});
  const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });
  const service = new CostService({ usage: reads.usage, storage: reads.storage, pricing, now: () => now, maxKeyHours: 1e12, keptRows: 0 });
  const limit = 1e12;
  let most = 0;
  // One request's budget across the months, as CostService.query's. A month's pricing counts on a
  // budget of its own (given back when it ends) and polls this one between its steps: the most live
  // memory is sampled there, and weighed against the month's quantities once it is priced.
  const budget: NonNullable<Parameters<CostService['priceMonth']>[3]> = {
    left: limit,
    limit,
    cancelled: () => {
      gc();
      const m = process.memoryUsage();
      most = Math.max(most, m.heapUsed + m.arrayBuffers);
      return false;
    },
  };
  const started = Date.now();
  const perMonth: Record<string, { quantities: number; fineRows: number; mostLiveMb: number; mostLiveBytesPerQuantity: number }> = {};
  for (const m of months) {
    const before = limit - budget.left;
    most = 0;
    // Not kept past its month (keptRows 0, and not held here): its quantities' memory is the one measured.
    const rows = (await service.priceMonth(tenantId, m, undefined, budget)).reduce((n, a) => n + a.priced.length, 0);
    const quantities = limit - budget.left - before;
    perMonth[m] = { quantities, fineRows: rows, mostLiveMb: Math.round(most / 2 ** 20), mostLiveBytesPerQuantity: Math.round(most / quantities) };
  }
  print({ step: 'month', months: perMonth, quantities: limit - budget.left, ms: Date.now() - started, peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024) });
  await reads.close();
}

async function keptMonth(path: string, tenantId: number, now: number, month: string): Promise<void> {
  const reads = await openThreadReads({ backend: 'sqlite', path, busyTimeoutMs: 5000 }, async () => {});
  const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });
  // Held as in kept: the service keeping the month, in an array, its result read in a function.
  const held: unknown[] = [new CostService({ usage: reads.usage, storage: reads.storage, pricing, now: () => now, maxKeyHours: 1e12, keptRows: 1e12 })];
  const rows = await (async () => (await (held[0] as CostService).priceMonth(tenantId, month)).reduce((n, a) => n + a.priced.length, 0))();
  const withMonth = memory();
  held.length = 0;
  const withoutMonth = memory();
  print({
    step: 'keptmonth',
    month,
    fineRows: rows,
    heapBytesPerRow: Math.round((withMonth.heap - withoutMonth.heap) / rows),
    arrayBytesPerRow: Math.round((withMonth.arrays - withoutMonth.arrays) / rows),
  });
  await reads.close();
}

async function pair(path: string, tenantId: number, now: number, pool: number, steps: number, months: string[]): Promise<void> {
  const reads = await openThreadReads({ backend: 'sqlite', path, busyTimeoutMs: 5000 }, async () => {});
  const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });
  const service = new CostService({ usage: reads.usage, storage: reads.storage, pricing, now: () => now, maxKeyHours: pool, keptRows: 0 });
  let most = 0;
  let taken = 0;
  let second: () => void = () => {};
  const secondAsked = new Promise<void>((ask) => {
    second = ask;
  });
  // Polled by each pricing between its steps while its request waits for it (as in month).
  const sample = (first: boolean) => () => {
    if (first && ++taken === steps) second();
    gc();
    const m = process.memoryUsage();
    most = Math.max(most, m.heapUsed + m.arrayBuffers);
    return false;
  };
  const priced = async (m: string, first: boolean) =>
    (await service.priceMonth(tenantId, m, undefined, { left: pool, limit: pool, cancelled: sample(first) })).reduce((n, a) => n + a.priced.length, 0);
  const started = Date.now();
  const fineRows = await Promise.all([priced(months[0]!, true), secondAsked.then(() => priced(months[1]!, false))]);
  print({ step: 'pair', pool, steps, months, fineRows, mostLiveMb: Math.round(most / 2 ** 20), quantitiesPeak: service.quantitiesPeak ?? null, ms: Date.now() - started, peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024) });
  await reads.close();
}

const [command, dir, ...rest] = process.argv.slice(2);
const numbers = rest.map(Number);
if (command === 'build') await build(dir!, numbers[0]!, numbers[1]!, numbers[2]!);
else if (command === 'kept') await kept(dir!, numbers[0] ?? 0);
else if (command === 'need') await need(dir!, numbers[0]!);
else if (command === 'price') await price(dir!);
else if (command === 'month') await month(dir!, numbers[0]!, numbers[1]!, rest.slice(2));
else if (command === 'keptmonth') await keptMonth(dir!, numbers[0]!, numbers[1]!, rest[2]!);
else if (command === 'pair') await pair(dir!, numbers[0]!, numbers[1]!, numbers[2]!, numbers[3]!, rest.slice(4));
else throw new Error('usage: cost-memory build|kept|need|price|month|keptmonth|pair <dir> ...');
