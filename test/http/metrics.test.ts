/**
 * /metrics on real servers over real HTTP: scraped under load, its counters must equal what the
 * store holds and what the clients were answered; --metrics-port moves it to a listener of its own;
 * under `serve --workers 2` (PostgreSQL) a scrape, on either listener, sums both workers.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { minimalWireEvent } from '../support/events.js';
import { allStoredIds, runLoad } from '../support/load.js';
import { createKey, request, startServer, tempDir } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';
import { dropScratchDatabases, scratchDatabase } from '../support/scratch.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (no escaped quotes in our label values). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not an exposition line: ${line}`);
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of a metric's samples whose labels include `match`. */
function total(samples: Sample[], name: string, match: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v)).reduce((n, s) => n + s.value, 0);
}

async function scrape(url: string): Promise<Sample[]> {
  const reply = await fetch(`${url}/metrics`);
  assert.equal(reply.status, 200);
  assert.match(reply.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parse(await reply.text());
}

const event = (eventId: string, extra: object = {}) => ({ ...(minimalWireEvent('GetObject') as object), eventId, ...extra });

describe('/metrics', () => {
  it('scraped under load, counts exactly the events stored, the duplicates, the rejections and the replies', async () => {
    const dataDir = tempDir();
    // No background catch-up: the usage rollups stay behind until a read folds them.
    const server = await startServer({ dataDir, env: { BUCKETMETER_TEST_CATCH_UP_DELAY_MS: '600000' } });
    try {
      const key = server.bootstrapKey!;
      const other = await createKey('other', ['--data-dir', dataDir]);
      // Load, with scrapes while it runs: each must answer, and the accepted count never goes back.
      // The load runs for 2.5 s and until five scrapes have answered, however busy the machine.
      let fifth!: () => void;
      const fiveScraped = new Promise<void>((resolve) => (fifth = resolve));
      const until = Promise.race([Promise.all([sleep(2500), fiveScraped]), sleep(60_000)]).then(() => undefined);
      const seen: number[] = [];
      const scrapes = (async () => {
        let done = false;
        void until.then(() => (done = true));
        while (!done) {
          const accepted = total(await scrape(server.url), 'bucketmeter_events_total', { outcome: 'accepted' });
          assert.ok(accepted >= (seen.at(-1) ?? 0), `accepted went from ${seen.at(-1)} to ${accepted}`);
          seen.push(accepted);
          if (seen.length === 5) fifth();
          await sleep(100);
        }
      })();
      const load = await runLoad({ url: server.url, key, connections: 8, batchEvery: 4, batchSize: 50, prefix: 'm', until });
      await scrapes;
      assert.ok(seen.length >= 5, `scraped ${seen.length} times during the load`);
      const during = seen.filter((n) => n > 0 && n < load.acknowledged.size);
      assert.ok(during.length > 0, `no scrape saw the load in progress: ${seen.join(', ')} of ${load.acknowledged.size}`);
      assert.ok(load.acknowledged.size > 500, `only ${load.acknowledged.size} events acknowledged`);

      // Known extras: duplicates, rejected events (one a kind that does not exist), another tenant.
      const again = [...load.acknowledged].slice(0, 20);
      for (const id of again) assert.equal((await request(`${server.url}/s3`, { key, body: event(id) })).json.duplicate, true);
      const mixed = [event('mixed-1'), { action: 'GetObject', timestamp: '2024-05-01T12:00:00Z', provider: 'aws' }, event('mixed-2', { bytes: -1 }), event('mixed-3')];
      const batch = await request(`${server.url}/s3/batch`, { key, body: mixed });
      assert.deepEqual([batch.json.accepted, batch.json.rejected.length], [2, 2]);
      assert.equal((await request(`${server.url}/s3`, { key, body: { ...event('bad'), action: 'Unknown' } })).status, 400);
      assert.equal((await request(`${server.url}/s3`, { key, raw: 'not json', headers: { 'content-type': 'application/json' } })).status, 400);
      for (let i = 0; i < 3; i++) assert.equal((await request(`${server.url}/s3`, { key: other, body: event(`o-${i}`) })).status, 200);

      const stored = await allStoredIds(server.url, key);
      const samples = await scrape(server.url);
      const tenant = { tenant: '1' };
      assert.equal(total(samples, 'bucketmeter_events_total', { ...tenant, outcome: 'accepted' }), stored.length, 'accepted = events stored');
      assert.equal(stored.length, load.acknowledged.size + 2);
      assert.equal(total(samples, 'bucketmeter_events_total', { ...tenant, outcome: 'duplicate' }), again.length);
      assert.equal(total(samples, 'bucketmeter_events_total', { ...tenant, outcome: 'rejected', action: 'GetObject' }), 2);
      assert.equal(total(samples, 'bucketmeter_events_total', { ...tenant, outcome: 'rejected', action: 'unknown' }), 1);
      assert.equal(total(samples, 'bucketmeter_events_total', { tenant: '2', outcome: 'accepted' }), 3, 'the other tenant, apart');
      assert.equal(total(samples, 'bucketmeter_events_total', { tenant: '2' }), 3);
      assert.equal(total(samples, 'bucketmeter_quarantine_entries_total', { code: 'BM_ERR_EVENT_INVALID' }) + total(samples, 'bucketmeter_quarantine_entries_total', { code: 'BM_ERR_EVENT_UNMAPPED' }), 3);
      assert.equal(total(samples, 'bucketmeter_quarantine_entries_total', { code: 'BM_ERR_BODY_INVALID_JSON' }), 1);

      // Every reply the load read, plus the extras, under its route template.
      const ingestReplies = total(samples, 'bucketmeter_http_requests_total', { route: '/s3' }) + total(samples, 'bucketmeter_http_requests_total', { route: '/s3/batch' });
      assert.equal(ingestReplies, load.answers.length + again.length + 1 + 2 + 3);
      assert.equal(total(samples, 'bucketmeter_http_requests_total', { route: '/s3/batch', status: '200' }) + total(samples, 'bucketmeter_http_requests_total', { route: '/s3', status: '200' }), (load.statuses.get(200) ?? 0) + again.length + 1 + 3);

      // Commits: every stored event, duplicate and quarantine entry went through one.
      const committed = stored.length + again.length + 3 + 3 + 1; // + other tenant's 3, 3 invalid events, 1 body
      assert.equal(total(samples, 'bucketmeter_commit_events_sum'), committed);
      assert.equal(total(samples, 'bucketmeter_commit_duration_seconds_count'), total(samples, 'bucketmeter_commit_events_count'));
      assert.ok(total(samples, 'bucketmeter_commit_events_count') < committed, 'commits were grouped');
      assert.equal(total(samples, 'bucketmeter_store_errors_total'), 0);
      assert.equal(total(samples, 'bucketmeter_write_queue_events'), 0, 'nothing waits once the load is over');
      assert.equal(total(samples, 'bucketmeter_processes'), 1);
      for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds']) assert.ok(samples.some((s) => s.name === name), name);

      // Nothing folded yet: every stored event, of both tenants, is pending.
      assert.equal(total(samples, 'bucketmeter_usage_pending_events'), stored.length + 3);
      assert.ok(total(samples, 'bucketmeter_usage_lag_seconds') >= 2, 'the oldest pending event is as old as the load');

      // A read applies the inventory's pending commits and folds the usage first: afterwards nothing is behind.
      const hour = Math.ceil(Date.now() / 3_600_000) + 1;
      const [from, to] = [hour - 24 * 399, hour].map((h) => new Date(h * 3_600_000).toISOString());
      const usage = await request(`${server.url}/v1/usage?from=${from}&to=${to}&storage=true`, { key });
      assert.equal(usage.status, 200, usage.text);
      const afterRead = await scrape(server.url);
      for (const name of ['bucketmeter_inventory_pending', 'bucketmeter_inventory_lag_seconds']) assert.ok(afterRead.some((s) => s.name === name), name);
      assert.equal(total(afterRead, 'bucketmeter_inventory_pending'), 0);
      assert.equal(total(afterRead, 'bucketmeter_inventory_lag_seconds'), 0);
      assert.equal(total(afterRead, 'bucketmeter_usage_pending_events'), 0);
      assert.equal(total(afterRead, 'bucketmeter_usage_lag_seconds'), 0);

      // Asked again with no new event: the first page comes from the answer the first read kept.
      const askedAgain = await request(`${server.url}/v1/usage?from=${from}&to=${to}&storage=true`, { key });
      assert.equal(askedAgain.text, usage.text);
      const pages = await scrape(server.url);
      assert.equal(total(pages, 'bucketmeter_usage_first_pages_total', { source: 'computed' }), 1);
      assert.equal(total(pages, 'bucketmeter_usage_first_pages_total', { source: 'kept' }), 1);
      assert.equal(total(pages, 'bucketmeter_usage_next_pages_total'), 0);
      // Its rows, its two window boundaries, 64 for the answer itself.
      assert.equal(total(pages, 'bucketmeter_usage_kept_rows'), (usage.json.rows as unknown[]).length + 2 + 64);

      const withQuery = await request(`${server.url}/metrics?name=x`);
      assert.equal(withQuery.json.code, 'BM_ERR_QUERY_INVALID', 'no parameter is silently ignored here either');
      const unknown = await request(`${server.url}/nowhere`);
      assert.equal(unknown.status, 404);
      assert.equal(total(await scrape(server.url), 'bucketmeter_http_requests_total', { route: 'unmatched', status: '404' }), 1, 'unknown paths share one label');
    } finally {
      await server.stop();
    }
  });

  it('--usage-kept-rows 0 keeps no /v1/usage answer: a first page asked again is computed again', async () => {
    const server = await startServer({ dataDir: tempDir(), args: ['--usage-kept-rows', '0'] });
    try {
      const url = `${server.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z`;
      for (let i = 0; i < 2; i++) assert.equal((await request(url, { key: server.bootstrapKey! })).status, 200);
      const samples = await scrape(server.url);
      assert.equal(total(samples, 'bucketmeter_usage_first_pages_total', { source: 'computed' }), 2);
      assert.equal(total(samples, 'bucketmeter_usage_first_pages_total', { source: 'kept' }), 0);
      assert.equal(total(samples, 'bucketmeter_usage_kept_rows'), 0);
    } finally {
      await server.stop();
    }
  });

  it('--metrics-port serves /metrics on a listener of its own, and only there', async () => {
    const server = await startServer({ dataDir: tempDir(), args: ['--metrics-port', '0'] });
    try {
      const port = Number(/"port":(\d+)[^\n]*"msg":"metrics listening"/.exec(server.output())?.[1]);
      assert.ok(port > 0 && port !== server.port, server.output());
      const onApi = await request(`${server.url}/metrics`);
      assert.equal(onApi.status, 404);
      assert.equal(onApi.json.code, 'BM_ERR_NOT_FOUND');
      assert.equal((await request(`${server.url}/s3`, { key: server.bootstrapKey!, body: event('e1') })).status, 200);
      const samples = await scrape(`http://127.0.0.1:${port}`);
      assert.equal(total(samples, 'bucketmeter_events_total', { outcome: 'accepted' }), 1);
      const elsewhere = await fetch(`http://127.0.0.1:${port}/v1/events`);
      assert.equal(elsewhere.status, 404);
      assert.match(elsewhere.headers.get('content-type') ?? '', /^application\/problem\+json/);
    } finally {
      await server.stop();
    }
  });
});

describe('/metrics under serve --workers 2 (PostgreSQL)', { skip: process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set: SKIPPED' }, () => {
  after(dropScratchDatabases);

  /** Starts `serve --workers 2` and waits for both workers. */
  async function startWorkers(args: string[]): Promise<ServerProcess> {
    const server = await startServer({ args: ['--workers', '2', ...args] });
    for (let i = 0; (server.output().match(/"msg":"bucketmeter listening"/g) ?? []).length < 2; i++) {
      assert.ok(i < 200, `the second worker did not start:\n${server.output()}`);
      await sleep(50);
    }
    return server;
  }

  /** Sends `n` events over 8 connections, which the primary spreads over both workers. */
  async function send(url: string, key: string, prefix: string, n: number): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = next++; i < n; i = next++) assert.equal((await request(`${url}/s3`, { key, body: event(`${prefix}-${i}`) })).status, 200);
      }),
    );
  }

  it('a scrape on the API port, answered by either worker, sums both', async () => {
    const db = await scratchDatabase();
    const key = await createKey('workers', ['--database-url', db.url]);
    const server = await startWorkers(['--database-url', db.url]);
    try {
      await send(server.url, key, 'w', 300);
      assert.equal((await allStoredIds(server.url, key)).length, 300);
      // Each scrape lands on one worker (new connections alternate); every one must see all 300.
      for (let i = 0; i < 6; i++) {
        const reply = await fetch(`${server.url}/metrics`, { headers: { connection: 'close' } });
        const samples = parse(await reply.text());
        assert.equal(total(samples, 'bucketmeter_processes'), 2, `scrape ${i} covers both workers`);
        assert.equal(total(samples, 'bucketmeter_events_total', { outcome: 'accepted' }), 300, `scrape ${i}`);
        assert.equal(total(samples, 'bucketmeter_http_requests_total', { route: '/s3', status: '200' }), 300, `scrape ${i}`);
      }
    } finally {
      await server.stop();
    }
  });

  it('--metrics-port is served by the primary, summing both workers', async () => {
    const db = await scratchDatabase();
    const key = await createKey('workers', ['--database-url', db.url]);
    const server = await startWorkers(['--database-url', db.url, '--metrics-port', '0']);
    try {
      const port = Number(/"port":(\d+)[^\n]*"msg":"metrics listening"/.exec(server.output())?.[1]);
      await send(server.url, key, 'p', 200);
      const samples = await scrape(`http://127.0.0.1:${port}`);
      assert.equal(total(samples, 'bucketmeter_processes'), 2);
      assert.equal(total(samples, 'bucketmeter_events_total', { outcome: 'accepted' }), 200);
      assert.equal(total(samples, 'bucketmeter_commit_events_sum'), 200);
    } finally {
      await server.stop();
    }
  });
});
