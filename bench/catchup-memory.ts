/**
 * The memory of one inventory catch-up of a backlog: a SQLite store opened in this process gets N new
 * objects (PutObject, a key each, in commits of 10,000) with nothing applied, then one catch-up applies
 * them all. Prints the process's resident memory before and at its peak during the catch-up (VmHWM,
 * reset first), and how long it took.
 *
 *   node --expose-gc dist/bench/catchup-memory.js N [SPAN]   → SPAN: seqs per step (default the store's; a
 *                                                        huge one applies the backlog in one step)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import type { EventToStore } from '../src/store/types.js';
import type { NormalizedEvent } from '../src/events/catalogue.js';

const MiB = 1024 * 1024;
const T0 = 1_714_521_600;
const status = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;

async function main(): Promise<void> {
  const [countText, spanText] = process.argv.slice(2);
  const count = Number(countText);
  if (!Number.isInteger(count) || count < 1) throw new Error('usage: catchup-memory.js N [SPAN]');
  const dir = mkdtempSync(join(tmpdir(), 'bm-catchup-'));
  const store = await openSqliteStore({ path: join(dir, 'bucketmeter.db'), ...(spanText === undefined ? {} : { catchUpSpan: Number(spanText) }) });
  try {
    const tenantId = 1;
    for (let done = 0; done < count; done += 10_000) {
      const events = Array.from({ length: Math.min(10_000, count - done) }, (_, i): EventToStore => {
        const n = done + i;
        const event = { eventId: `e${n}`, action: 'PutObject', timestamp: T0 + n, provider: 'aws', bucket: 'b', objectKey: `k/${n}`, bytes: 100, customerId: `c${n % 50}` } as NormalizedEvent;
        return { tenantId, receivedAt: T0, event };
      });
      await store.commit({ events, quarantine: [] });
    }
    (globalThis as { gc?: () => void }).gc?.();
    // Linux: 5 resets the peak (VmHWM) to the current resident size.
    writeFileSync('/proc/self/clear_refs', '5');
    const before = status('VmRSS');
    const started = performance.now();
    await store.inventory.catchUp();
    const seconds = (performance.now() - started) / 1000;
    console.log(JSON.stringify({ objects: count, span: spanText ?? 'default', rssBeforeMiB: Math.round(before / MiB), peakMiB: Math.round(status('VmHWM') / MiB), seconds: Number(seconds.toFixed(1)) }));
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
