/**
 * The sender against a real bucketmeter, through real failures: the server killed and restarted
 * mid-stream, 503s (refused, and lost after the server stored the batch), a network cut (TCP proxy),
 * and processes that end with a queue. Audit by eventId: every event tracked is stored, once.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BucketmeterClient } from '../src/index.js';
import type { MeterError, MeterEvent } from '../src/index.js';
import { createKey, startServer, startTcpProxy, storedEvents, tempDir } from './support/bucketmeter.js';
import type { ServerProcess } from './support/bucketmeter.js';
import { startFlakyProxy } from './support/flaky-http.js';

const CHILD = join(import.meta.dirname, 'support/exit-child.js');

const event = (i: number): MeterEvent => ({ action: 'PutObject', provider: 'aws', bucket: 'media', objectKey: `k/${i}`, bytes: i, customerId: `cus_${i % 7}` });

/** Tracks `total` events in steps of `step`, pausing between steps so that failures land mid-stream. */
async function stream(meter: BucketmeterClient, total: number, step: number, during?: (sent: number) => Promise<void>): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < total; i++) {
    const id = meter.track(event(i));
    assert.ok(id !== undefined, `event ${i} was refused`);
    ids.push(id);
    if ((i + 1) % step === 0) {
      await sleep(5);
      await during?.(i + 1);
    }
  }
  return ids;
}

/** Every id stored exactly once and nothing else stored. */
async function audit(url: string, key: string, ids: string[]): Promise<void> {
  const [stored, doubles] = await storedEvents(url, key);
  assert.equal(doubles.size, 0, 'an eventId was stored twice');
  const missing = ids.filter((id) => !stored.has(id));
  assert.deepEqual(missing.slice(0, 5), [], `${missing.length} events lost`);
  assert.equal(stored.size, ids.length, 'more events stored than tracked');
}

describe('sender against a real bucketmeter', () => {
  let server: ServerProcess;
  let key: string;
  let dataDir: string;

  before(async () => {
    dataDir = tempDir('bm-client-send-');
    server = await startServer({ dataDir });
    key = server.bootstrapKey!;
  });
  after(async () => {
    await server.stop();
  });

  it('delivers every event once, gzipped in batches, with stats that add up; a rejected event goes to onError, not retried', async () => {
    const errors: MeterError[] = [];
    const meter = new BucketmeterClient({ url: server.url, apiKey: key, exitHooks: false, onError: (e) => errors.push(e) });
    const ids = await stream(meter, 3000, 500);
    const bad = meter.track({ action: 'GetObject', provider: 'aws', bucket: 'media', objectKey: 'k' }); // bytes missing
    const post = meter.track({ action: 'PostObject', provider: 'aws', bucket: 'media', objectKey: 'form.png', bytes: 3 });
    await meter.flush();
    const stats = await meter.close();
    assert.deepEqual(stats, { queued: 0, sent: 3001, duplicates: 0, retried: 0, rejected: 1, dropped: 0 });
    assert.equal(errors.length, 1);
    const rejected = errors[0]!;
    assert.equal(rejected.kind, 'rejected');
    assert.equal(rejected.kind === 'rejected' && rejected.events[0]!.event.eventId, bad);
    assert.equal(rejected.kind === 'rejected' && rejected.events[0]!.errors.some((e) => e.path === '/bytes'), true);
    const [stored] = await storedEvents(server.url, key);
    assert.equal(stored.get(post!)?.action, 'PostObject');
    assert.equal(stored.has(bad!), false);
    await audit(server.url, key, [...ids, post!]);
  });

  it('server killed and restarted mid-stream: nothing lost, nothing doubled', async () => {
    const killDir = tempDir('bm-client-kill-');
    const other = await startServer({ dataDir: killDir });
    const otherKey = other.bootstrapKey!;
    const errors: MeterError[] = [];
    const meter = new BucketmeterClient({ url: other.url, apiKey: otherKey, exitHooks: false, maxRetryDelayMs: 300, onError: (e) => errors.push(e) });
    let restarted: ServerProcess = other;
    const ids = await stream(meter, 6000, 500, async (n) => {
      if (n === 2000) await other.kill();
      if (n === 4000) restarted = await startServer({ dataDir: killDir, args: ['--port', String(other.port)] });
    });
    await meter.flush();
    const stats = await meter.close();
    try {
      assert.ok(stats.retried > 0, 'the kill made the sender retry');
      assert.equal(stats.sent, 6000);
      assert.deepEqual([stats.rejected, stats.dropped, stats.queued], [0, 0, 0]);
      assert.ok(errors.every((e) => e.kind === 'retrying'));
      await audit(restarted.url, otherKey, ids);
    } finally {
      await restarted.stop();
    }
  });

  it('503s, refused and lost after storing: retried with the same eventIds, stored once', async () => {
    const proxy = await startFlakyProxy(server.url, (n) => (n % 3 === 0 ? 'refuse' : n % 3 === 1 ? 'lose' : 'pass'));
    const tenantKey = await newTenantKey();
    try {
      const meter = new BucketmeterClient({ url: proxy.url, apiKey: tenantKey, exitHooks: false, maxRetryDelayMs: 50 });
      const ids = await stream(meter, 4000, 500);
      await meter.flush();
      const stats = await meter.close();
      assert.ok(proxy.refused > 0 && proxy.lost > 0);
      assert.equal(stats.sent, 4000);
      assert.ok(stats.duplicates > 0, 'lost replies made the server see duplicates');
      assert.ok(stats.retried > 0);
      await audit(server.url, tenantKey, ids);
    } finally {
      await proxy.close();
    }
  });

  it('network cut (TCP proxy) mid-stream, then restored: nothing lost, nothing doubled', async () => {
    const proxy = await startTcpProxy('127.0.0.1', server.port);
    const tenantKey = await newTenantKey();
    try {
      const meter = new BucketmeterClient({ url: `http://127.0.0.1:${proxy.port}`, apiKey: tenantKey, exitHooks: false, maxRetryDelayMs: 200 });
      const ids = await stream(meter, 5000, 250, async (n) => {
        if (n === 1500) proxy.cut();
        if (n === 3500) proxy.restore();
      });
      await meter.flush();
      const stats = await meter.close();
      assert.ok(stats.retried > 0);
      assert.equal(stats.sent, 5000);
      await audit(server.url, tenantKey, ids);
    } finally {
      await proxy.close();
    }
  });

  it('413: batches split until they fit, later batches smaller, said once; nothing lost', async () => {
    const small = await startServer({ dataDir: tempDir('bm-client-413-'), args: ['--max-body-bytes', '20000'] });
    try {
      const errors: MeterError[] = [];
      const meter = new BucketmeterClient({ url: small.url, apiKey: small.bootstrapKey, exitHooks: false, onError: (e) => errors.push(e) });
      const ids = await stream(meter, 2000, 500);
      await meter.flush();
      const stats = await meter.close();
      assert.deepEqual(stats, { queued: 0, sent: 2000, duplicates: 0, retried: 0, rejected: 0, dropped: 0 });
      const told = errors.filter((e) => e.kind === 'permanent');
      assert.equal(told.length, 1, JSON.stringify(errors));
      assert.match(told[0]!.message, /HTTP 413/);
      await audit(small.url, small.bootstrapKey!, ids);
    } finally {
      await small.stop();
    }
  });

  it('maxBatchBytes bounds a batch in UTF-8 bytes: Japanese and emoji ids never take a body past it (the server\'s body limit), batches are filled to it, nothing lost', async () => {
    const LIMIT = 20_000;
    const bounded = await startServer({ dataDir: tempDir('bm-client-bytes-'), args: ['--max-body-bytes', String(LIMIT)] });
    const bodies: number[] = [];
    const proxy = await startFlakyProxy(bounded.url, () => 'pass', (json) => bodies.push(json.length));
    // 3 bytes of UTF-8 per UTF-16 unit for the kanji and kana, 2 per unit for the emoji (surrogate
    // pairs); lines of many lengths, so that batches end at many distances from the bound.
    const wide = (i: number): MeterEvent => ({ ...event(i), objectKey: `写真/アルバム/${i}.jpg`, customerId: `${'顧客'.repeat(1 + ((i * 7) % 150))}-${'🍣'.repeat(i % 10)}`, featureId: '動画🎬' });
    try {
      const ids: string[] = [];
      for (const spoolDir of [undefined, tempDir('bm-client-bytes-spool-')]) {
        bodies.length = 0;
        const errors: MeterError[] = [];
        const meter = new BucketmeterClient({ url: proxy.url, apiKey: bounded.bootstrapKey, maxBatchBytes: LIMIT, spoolDir, exitHooks: false, onError: (e) => errors.push(e) });
        for (let i = 0; i < 600; i++) ids.push(meter.track(wide(i))!);
        await meter.flush();
        const stats = await meter.close();
        assert.deepEqual(errors, [], 'no batch refused (413) or split');
        assert.deepEqual(stats, { queued: 0, sent: 600, duplicates: 0, retried: 0, rejected: 0, dropped: 0 });
        assert.ok(Math.max(...bodies) <= LIMIT, `bodies of ${Math.max(...bodies)} bytes, spool ${spoolDir !== undefined}`);
        // Sealed by the bound, not earlier: only the last batch is short of it by more than a line (at most ~1,200 bytes).
        assert.ok(bodies.filter((b) => b < LIMIT - 1500).length <= 1, `bodies ${bodies.join(', ')}`);
      }
      await audit(bounded.url, bounded.bootstrapKey!, ids);
    } finally {
      await proxy.close();
      await bounded.stop();
    }
  });

  it('401: said once, nothing more sent, flush() does not hang; close() counts the queue as dropped', async () => {
    const errors: MeterError[] = [];
    const meter = new BucketmeterClient({ url: server.url, apiKey: 'bmk_wrong', exitHooks: false, onError: (e) => errors.push(e) });
    for (let i = 0; i < 1200; i++) meter.track(event(i));
    await meter.flush();
    const stats = await meter.close();
    assert.equal(errors.filter((e) => e.kind === 'permanent').length, 1);
    assert.match(errors[0]!.message, /refused the API key \(HTTP 401\)/);
    assert.deepEqual(stats, { queued: 0, sent: 0, duplicates: 0, retried: 0, rejected: 0, dropped: 1200 });
  });

  it('a full queue drops new events, counts them, and says so once (coalesced)', async () => {
    const errors: MeterError[] = [];
    const meter = new BucketmeterClient({ url: server.url, apiKey: 'bmk_wrong', maxQueueSize: 100, exitHooks: false, onError: (e) => errors.push(e) });
    const accepted = Array.from({ length: 150 }, (_, i) => meter.track(event(i))).filter((id) => id !== undefined);
    assert.equal(accepted.length, 100);
    assert.equal(meter.stats().dropped, 50);
    assert.deepEqual(errors.filter((e) => e.kind === 'dropped').map((e) => e.kind === 'dropped' && e.events), [1]);
    await meter.close({ timeoutMs: 100 });
    const dropped = errors.filter((e) => e.kind === 'dropped').map((e) => e.kind === 'dropped' && e.events);
    assert.deepEqual(dropped, [1, 49, 100], 'first drop at once, the rest coalesced at close, then the unsent queue');
  });

  describe('process exit with a queue', () => {
    const run = (args: string[], prefix: string) => {
      const child = spawn(process.execPath, [CHILD, server.url, key, ...args], { env: { ...process.env, BM_PREFIX: prefix }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.on('exit', (code, signal) => done({ code, signal })));
      return { child, exited, out: () => out };
    };
    const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
    const storedWith = async (prefix: string) => [...(await storedEvents(server.url, key))[0].keys()].filter((id) => id.startsWith(prefix + '-'));

    it('the event loop runs dry: beforeExit drains the queue, then the process ends by itself', async () => {
      const child = run(['1200', 'natural'], 'nat');
      assert.deepEqual(await child.exited, { code: 0, signal: null });
      assert.deepEqual((await storedWith('nat')).sort(), ids('nat', 1200).sort());
    });

    it('SIGTERM: drained, then the process still ends by the signal', async () => {
      const child = run(['1300', 'sigterm'], 'term');
      while (!child.out().includes('ready')) await sleep(10);
      child.child.kill('SIGTERM');
      assert.deepEqual(await child.exited, { code: null, signal: 'SIGTERM' });
      assert.deepEqual((await storedWith('term')).sort(), ids('term', 1300).sort());
    });

    it('process.exit() with a spool: the next process using the spool sends what was left', async () => {
      const spool = tempDir('bm-client-spool-');
      const first = run(['1100', 'exit', spool], 'spx');
      assert.deepEqual(await first.exited, { code: 0, signal: null });
      assert.ok(readdirSync(spool).length > 0, 'the queue is on disk');
      const second = run(['0', 'natural', spool], 'unused');
      assert.deepEqual(await second.exited, { code: 0, signal: null });
      assert.deepEqual((await storedWith('spx')).sort(), ids('spx', 1100).sort());
      assert.deepEqual(readdirSync(spool), []);
    });

    it('SIGKILL mid-stream with a spool: every event tracked before the kill is stored, once', async () => {
      const spool = tempDir('bm-client-spool-');
      const first = run(['0', 'stream', spool], 'kill');
      while ((first.out().match(/\n/g) ?? []).length < 20) await sleep(10);
      first.child.kill('SIGKILL');
      await first.exited;
      const tracked = Math.max(...first.out().trim().split('\n').map(Number));
      const second = run(['0', 'natural', spool], 'unused');
      assert.deepEqual(await second.exited, { code: 0, signal: null });
      const stored = new Set(await storedWith('kill'));
      const missing = ids('kill', tracked).filter((id) => !stored.has(id));
      assert.deepEqual(missing, []);
      assert.deepEqual(readdirSync(spool), []);
    });
  });

  async function newTenantKey(): Promise<string> {
    return createKey(`t${Date.now()}${Math.random().toString(36).slice(2, 6)}`, ['--data-dir', dataDir]);
  }
});

describe('sender without a key', () => {
  it('is a no-op that says so once and counts what it drops; the application never sees an error', async () => {
    const errors: MeterError[] = [];
    const meter = new BucketmeterClient({ url: 'http://127.0.0.1:9', apiKey: undefined, exitHooks: false, onError: (e) => errors.push(e) });
    for (let i = 0; i < 10; i++) assert.equal(meter.track(event(i)), undefined);
    await meter.flush();
    assert.deepEqual(await meter.close(), { queued: 0, sent: 0, duplicates: 0, retried: 0, rejected: 0, dropped: 10 });
    assert.deepEqual(errors.map((e) => e.message), ['bucketmeter: no API key given: events are not sent']);
  });
});
