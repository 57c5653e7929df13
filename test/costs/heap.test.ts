/**
 * The cost thread's memory (--cost-heap-mb): as set, else half of the machine's memory, never below
 * Node's own limit; at least MIN_COST_HEAP_MB when set; the thread is started with the V8 heap its
 * bounds leave (its own heap limit read in the thread); and its bounds are derived from it, so that
 * at a small heap a request too large is refused by the bound (the thread and what it keeps
 * surviving), not by the thread running out of heap.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { getHeapStatistics } from 'node:v8';
import { ConfigError, MIN_COST_HEAP_MB, loadConfig } from '../../src/config.js';
import { COST_BYTES, KEPT_ANSWER_ROWS, KEPT_ROWS, MAX_KEY_HOURS, costBounds } from '../../src/costs/service.js';
import { CostThread, costHeap, memoryLimit } from '../../src/costs/thread.js';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { parseUsageParams } from '../../src/usage/params.js';
import { newTenant } from '../store/contract.js';
import { tempDir } from '../support/server.js';

const MiB = 2 ** 20;
const MARCH = Date.UTC(2026, 2, 1) / 1000;
const APRIL = Date.UTC(2026, 3, 1) / 1000;
const HOUR = 3600;

describe('cost thread heap', () => {
  it('is the setting when given, else half of the machine and at least this process own limit', () => {
    assert.equal(costHeap(1234), 1234);
    const auto = costHeap(0);
    assert.ok(auto >= Math.floor(totalmem() / 2 / 2 ** 20), `${auto} MB is at least half of the machine`);
    assert.ok(auto >= Math.floor(getHeapStatistics().heap_size_limit / 2 ** 20), `${auto} MB is at least Node's own limit`);
  });

  it("is half of the memory it is given (a container's limit where lower than the machine), at least Node's own limit", () => {
    const own = Math.floor(getHeapStatistics().heap_size_limit / 2 ** 20);
    assert.equal(costHeap(0, 256 * 2 ** 30), 128 * 1024);
    assert.equal(costHeap(0, 2 ** 30), Math.max(own, 512));
    assert.ok(memoryLimit() <= totalmem());
  });

  it(`is refused below ${MIN_COST_HEAP_MB} MB when set, with the setting named (0 is automatic)`, () => {
    assert.throws(
      () => loadConfig({ 'cost-heap-mb': '40' }, {}),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.deepEqual(err.problems, [`--cost-heap-mb / BUCKETMETER_COST_HEAP_MB: expected 0 (half of the memory) or at least ${MIN_COST_HEAP_MB} (MB), got 40: less prices too little to be of use`]);
        return true;
      },
    );
    assert.throws(() => loadConfig({}, { BUCKETMETER_COST_HEAP_MB: String(MIN_COST_HEAP_MB - 1) }), ConfigError);
    assert.equal(loadConfig({ 'cost-heap-mb': String(MIN_COST_HEAP_MB) }, {}).costHeapMb, MIN_COST_HEAP_MB);
    assert.equal(loadConfig({ 'cost-heap-mb': '0' }, {}).costHeapMb, 0);
  });
});

describe('cost thread bounds from its memory', () => {
  it('fit the memory together (by the measured figures), the typed arrays outside the heap given to V8, each at most its constant', () => {
    let last = costBounds(MIN_COST_HEAP_MB);
    for (const mb of [MIN_COST_HEAP_MB, 200, 512, 1000, 4096, 12_000, 64_000, 1_000_000]) {
      const b = costBounds(mb);
      const heap = COST_BYTES.base + b.maxKeyHours * COST_BYTES.quantityHeap + b.keptRows * COST_BYTES.rowHeap + b.keptAnswerRows * COST_BYTES.answerRow;
      const arrays = b.maxKeyHours * COST_BYTES.quantityArrays + b.keptRows * COST_BYTES.rowArrays;
      assert.ok(heap + arrays <= mb * MiB, `${mb} MB: ${((heap + arrays) / MiB).toFixed(0)} MB at most`);
      assert.ok(heap <= b.heapMb * MiB, `${mb} MB: the heap given (${b.heapMb} MB) holds ${(heap / MiB).toFixed(0)} MB`);
      assert.ok(b.heapMb * MiB + arrays <= mb * MiB);
      assert.ok(b.maxKeyHours <= MAX_KEY_HOURS && b.keptRows <= KEPT_ROWS && b.keptAnswerRows <= KEPT_ANSWER_ROWS);
      assert.ok(b.maxKeyHours >= last.maxKeyHours && b.keptRows >= last.keptRows && b.keptAnswerRows >= last.keptAnswerRows, 'more memory never bounds less');
      last = b;
    }
    assert.deepEqual(costBounds(1_000_000), { ...costBounds(1_000_000), maxKeyHours: MAX_KEY_HOURS, keptRows: KEPT_ROWS, keptAnswerRows: KEPT_ANSWER_ROWS });
  });

  it('start the thread with the V8 heap they leave: its own heap limit, read in the thread', async () => {
    const dir = tempDir();
    const seen = join(dir, 'heap');
    const script = join(dir, 'worker.mjs');
    const real = new URL('../../src/costs/worker.js', import.meta.url).href;
    writeFileSync(script, `import { writeFileSync } from 'node:fs';\nimport { getHeapStatistics } from 'node:v8';\nwriteFileSync(${JSON.stringify(seen)}, String(getHeapStatistics().heap_size_limit));\nawait import(${JSON.stringify(real)});\n`);
    const store = await openSqliteStore({ path: join(dir, 'cost.db') });
    const mb = 300;
    const costs = new CostThread(store.threadReads, { prices: undefined, bucketPlans: undefined, costHeapMb: mb }, pathToFileURL(script));
    try {
      const query = parseUsageParams({ from: '2026-09-01T00:00:00Z', to: '2026-09-02T00:00:00Z' }, undefined, ['json', 'csv', 'focus']);
      assert.deepEqual(JSON.parse((await costs.page(1, query)).text).rows, []);
      const limit = Number(readFileSync(seen, 'utf8')) / MiB;
      // V8's limit is the old generation given plus its young generation (a few semi-spaces of at most 16 MB).
      const { heapMb } = costBounds(mb);
      assert.ok(heapMb < mb);
      assert.ok(limit >= heapMb && limit <= heapMb + 64, `the thread's heap limit ${limit.toFixed(0)} MB, given ${heapMb} MB of old generation`);
    } finally {
      await costs.close();
      await store.close();
    }
  });

  it('refuse a month too large for a small heap by the bound, the thread and its kept months surviving', async () => {
    // 1,000 customers storing 70 objects each, a third deleted a day later: about 360k quantities
    // (inventory rows and runs), past the 87k a 64 MB thread's bound allows.
    const dir = tempDir();
    const store = await openSqliteStore({ path: join(dir, 'cost.db') });
    const { tenantId } = await newTenant(store);
    const { tenantId: small } = await newTenant(store);
    const events: NormalizedEvent[] = [];
    for (let k = 0; k < 1000; k++) {
      for (let p = 0; p < 70; p++) {
        const at = MARCH + ((k * 13 + p * 97) % 700) * HOUR + 60;
        events.push({ action: 'PutObject', timestamp: at, provider: 'aws', bucket: 'media', objectKey: `s${k}-${p}`, bytes: 100_000 + p, customerId: `c${k}` } as NormalizedEvent);
        if (p % 3 === 0) events.push({ action: 'DeleteObject', timestamp: at + 24 * HOUR, provider: 'aws', bucket: 'media', objectKey: `s${k}-${p}`, customerId: `c${k}` } as NormalizedEvent);
      }
    }
    for (let i = 0; i < events.length; i += 10_000) await store.commit({ events: events.slice(i, i + 10_000).map((event) => ({ tenantId, receivedAt: APRIL, event })), quarantine: [] });
    await store.commit({ events: [{ tenantId: small, receivedAt: APRIL, event: { action: 'PutObject', timestamp: MARCH + 60, provider: 'aws', bucket: 'media', objectKey: 'o', bytes: 1000, customerId: 'c' } as NormalizedEvent }], quarantine: [] });
    const mb = 64;
    const costs = new CostThread(store.threadReads, { prices: undefined, bucketPlans: undefined, costHeapMb: mb });
    const march = parseUsageParams({ from: '2026-03-01T00:00:00Z', to: '2026-04-01T00:00:00Z', granularity: 'none' }, undefined, ['json', 'csv', 'focus']);
    try {
      const before = JSON.parse((await costs.page(small, march)).text).rows;
      assert.equal(before.length, 1);
      await assert.rejects(costs.page(tenantId, march), (err: { code?: string; message: string }) => {
        assert.equal(err.code, 'BM_ERR_COST_TOO_LARGE', err.message);
        assert.match(err.message, new RegExp(`more than the ${costBounds(mb).maxKeyHours.toLocaleString('en')} attribution key × hour quantities`));
        return true;
      });
      // The same thread answers on, its kept month as before.
      assert.deepEqual(JSON.parse((await costs.page(small, march)).text).rows, before);
    } finally {
      await costs.close();
      await store.close();
    }
  });
});
