/**
 * The dashboard in a real browser (Debian's chromium driven by playwright-core) against a real server
 * holding generated events: every view loads with no console error and no failed request, charts draw
 * their data, a filter and a range change change the numbers to what the API answers, sign-in
 * failures say what is wrong, a read with no answer or a 503 says so (not "refused") and leaves the
 * rest of the page working, tables download as CSV, the keyboard reaches every view and a narrow
 * window does not scroll sideways; navigating aborts the reads of the view left (the server drops
 * them) and draws only the new view's answers. Cost and inventory assertions run when the server
 * offers /v1/costs and /v1/objects (its OpenAPI document says); otherwise the views must say they are
 * not available. Also measures "overview interactive" (first numbers painted) and, with
 * SCREENSHOTS_DIR set, saves a screenshot of each view there.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { chromium } from 'playwright-core';
import type { BrowserContext, Page, Route } from 'playwright-core';
import { ERRORS } from '../src/errors.js';
import { dropScratchDatabases, scratchDatabase, withPg } from '../test/support/scratch.js';
import { createKey, request, runCli, startServer, tempDir } from '../test/support/server.js';
import type { ServerProcess } from '../test/support/server.js';

const CHROMIUM = '/usr/bin/chromium';
const DAY = 86_400;
/** The generated history: 14 UTC days from FROM. */
const FROM = Date.parse('2026-10-01T00:00:00Z') / 1000;
const DAYS = 14;
const RANGE = 'from=2026-10-01&to=2026-10-14&tz=UTC&g=day';
/** Events generated; more (UI_TEST_EVENTS=200000) to measure "overview interactive" on a larger history. */
const EVENTS = Number(process.env.UI_TEST_EVENTS ?? 3000);
const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');

/** A small seeded generator, so that every run sees the same history. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function history(count: number): Record<string, unknown>[] {
  const next = random(17);
  const pick = <T>(values: T[]): T => values[Math.floor(next() * values.length)]!;
  const events: Record<string, unknown>[] = [];
  for (let i = 0; i < count; i++) {
    const action = pick(['GetObject', 'GetObject', 'PutObject', 'HeadObject', 'DeleteObject']);
    const e: Record<string, unknown> = {
      eventId: `ui-${i}`,
      action,
      timestamp: iso(FROM + Math.floor(next() * DAYS * DAY)),
      provider: pick(['aws', 'wasabi', 'backblaze']),
      bucket: pick(['media', 'logs', 'backups']),
      objectKey: `photos/${Math.floor(next() * 50)}.jpg`,
      customerId: pick(['cus-alpha', 'cus-bravo', 'cus-charlie', 'cus-delta', 'cus-echo']),
      featureId: pick(['gallery', 'export', 'sync']),
      clientType: pick(['ios', 'web']),
      clientId: pick(['dev-1', 'dev-2', 'dev-3', 'dev-4']),
    };
    if (action === 'GetObject' || action === 'PutObject') e.bytes = Math.floor(next() * 50_000_000);
    events.push(e);
  }
  return events;
}

/** A key of `tenant` with `scope`, made with the CLI on the store `storeArgs` name. */
async function scopedKey(tenant: string, scope: string, storeArgs: string[]): Promise<string> {
  const created = await runCli(['keys', 'create', '--tenant', tenant, '--scope', scope, ...storeArgs]);
  assert.equal(created.code, 0, created.stderr);
  return created.stdout.trim();
}

/** Sends the generated history to a server, 500 events a batch. */
async function ingest(url: string, key: string): Promise<void> {
  const events = history(EVENTS);
  for (let i = 0; i < events.length; i += 500) {
    const reply = await request(`${url}/s3/batch`, { key, body: events.slice(i, i + 500) });
    assert.equal(reply.json.rejectedCount, 0, reply.text);
  }
}

/** `done()` polled until true, for at most 10 s; the assertion says `what` and `state()` if not. */
async function until(what: string, done: () => Promise<boolean>, state: () => unknown): Promise<void> {
  for (const started = Date.now(); !(await done()); await sleep(20)) {
    assert.ok(Date.now() - started < 10_000, `${what}: not within 10 s (${JSON.stringify(await state())})`);
  }
}

after(dropScratchDatabases);

interface Opened {
  page: Page;
  /** Console errors, page errors, failed requests and error replies seen so far. */
  problems: string[];
}

for (const backend of ['sqlite']) {
  describe(`dashboard in chromium (${backend})`, () => {
    let server: ServerProcess;
    let browser: BrowserContext;
    let readKey: string;
    let ingestKey: string;
    let features: { costs: boolean; objects: boolean; storage: boolean; storageParam: boolean };
    const profile = tempDir();

    const api = async (path: string) => {
      const reply = await request(`${server.url}${path}`, { key: readKey });
      assert.equal(reply.status, 200, `${path}: ${reply.text}`);
      return reply.json;
    };

    /** A new tab (so an empty sessionStorage), signed in with `key` unless it is undefined. */
    const open = async (hash: string, key: string | undefined, options: { width?: number; allow?: RegExp; base?: string } = {}): Promise<Opened> => {
      const page = await browser.newPage();
      await page.setViewportSize({ width: options.width ?? 1280, height: 900 });
      if (key !== undefined) await page.addInitScript((k) => sessionStorage.setItem('bucketmeter.apiKey', k), key);
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error' && options.allow?.test(m.text()) !== true) problems.push(`console: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
      page.on('response', (r) => {
        if (r.status() >= 400 && options.allow?.test(`${r.status()} ${r.url()}`) !== true) problems.push(`${r.status()} ${r.url()}`);
      });
      await page.goto(`${options.base ?? server.url}/ui/${hash}`);
      return { page, problems };
    };

    const ready = async (page: Page) => {
      await page.waitForFunction(() => {
        const main = document.querySelector('main')!;
        return main.dataset.state === 'ready' && main.dataset.rendered === location.hash;
      }, undefined, { timeout: 20_000 });
    };
    const card = (page: Page, name: string) => page.textContent(`[data-card="${name}"] .value`);
    /** Chart drawn with data: points in the data, and painted pixels on its canvas. */
    const painted = (page: Page, name: string) =>
      page.evaluate((n) => {
        const box = document.querySelector(`[data-chart="${n}"]`) as HTMLElement | null;
        const canvas = box?.querySelector('canvas');
        if (!box || !canvas) return { points: 0, pixels: 0 };
        const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
        let pixels = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) pixels++;
        return { points: Number(box.dataset.points), pixels };
      }, name);
    const shot = async (page: Page, name: string) => {
      const dir = process.env.SCREENSHOTS_DIR;
      if (!dir) return;
      mkdirSync(dir, { recursive: true });
      // The whole page up to 1,600 px: long tables would make megabyte images of rows alike.
      const height = await page.evaluate(() => document.documentElement.scrollHeight);
      const width = page.viewportSize()!.width;
      await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true, clip: { x: 0, y: 0, width, height: Math.min(height, 1600) } });
    };
    const format = (n: number) => new Intl.NumberFormat('en-US').format(n);
    /** Fills fields of the range form and applies it: the URL, then the numbers, follow. */
    const applyRange = async (page: Page, fields: Record<string, string>) => {
      await changeRange(page, fields);
      await ready(page);
    };
    /** The same, without waiting for the new range's numbers. */
    const changeRange = async (page: Page, fields: Record<string, string>) => {
      for (const [name, value] of Object.entries(fields)) await page.fill(`#range input[name="${name}"]`, value);
      await page.click('#range button[type="submit"]');
      await page.waitForFunction((f) => Object.entries(f).every(([n, v]) => new URLSearchParams(location.hash.split('?')[1]).get(n) === v), fields);
    };
    /** A failed read's notice when no answer came, with its Retry button. */
    const unreachable = /^The server could not be reached: no answer came \(it may be stopped or restarting, or the network is down\)\. Check that bucketmeter is running at this address, then retry\. Retry$/;
    /** The end of every page's test: its screenshot, nothing went wrong on it, the tab closed. */
    const finish = async ({ page, problems }: Opened, screenshot?: string) => {
      if (screenshot !== undefined) await shot(page, screenshot);
      assert.deepEqual(problems, []);
      await page.close();
    };

    before(async () => {
      const dataDir = tempDir();
      const storeArgs = ['--data-dir', dataDir];
      const writeKey = await createKey('acme', storeArgs);
      const otherKey = await createKey('other', storeArgs);
      readKey = await scopedKey('acme', 'read', storeArgs);
      ingestKey = await scopedKey('acme', 'ingest', storeArgs);
      server = await startServer({ args: storeArgs });
      await ingest(server.url, writeKey);
      // Quarantined inputs, one of them with markup that must show as text; and another tenant's.
      for (const objectKey of ['<img src=x id=injected>', 'a.txt']) {
        const reply = await request(`${server.url}/s3`, { key: writeKey, body: { action: 'GetObject', timestamp: 'yesterday', provider: 'aws', bucket: 'media', objectKey, bytes: 1 } });
        assert.equal(reply.status, 400);
      }
      await request(`${server.url}/s3`, { key: otherKey, body: { action: 'GetObject', timestamp: 'never', provider: 'aws' } });
      const doc = (await request(`${server.url}/openapi.json`)).json;
      const usage = doc.paths['/v1/usage'].get;
      features = {
        costs: '/v1/costs' in doc.paths,
        objects: '/v1/objects' in doc.paths,
        storage: 'storedBytes' in usage.responses['200'].content['application/json'].schema.properties.rows.items.properties,
        storageParam: usage.parameters.some((p: { name: string }) => p.name === 'storage'),
      };
      console.log(`# server offers: ${JSON.stringify(features)}`);
      // A fresh profile directory: Playwright takes it as the persistent context's, not as an argument.
      browser = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
        acceptDownloads: true,
      });
    });
    after(async () => {
      await browser?.close();
      await server?.stop();
    });

    it('runs under a policy that refuses inline script', async () => {
      const opened = await open('', undefined);
      await opened.page.waitForSelector('form.signin');
      const ran = await opened.page.evaluate(async () => {
        const script = document.createElement('script');
        script.textContent = 'window.inlineRan = true';
        document.body.append(script);
        await new Promise((done) => setTimeout(done, 50));
        return (window as unknown as { inlineRan?: boolean }).inlineRan === true;
      });
      assert.equal(ran, false);
      // The browser says why: the one problem on this page.
      assert.equal(opened.problems.length, 1);
      assert.match(opened.problems[0]!, /inline script violates the following Content Security Policy directive 'script-src 'self''/);
      await opened.page.close();
    });

    it('formats bytes in KB/MB/GB, money in its currency, and adds money exactly', async () => {
      const { page, problems } = await open('', undefined);
      const shown = await page.evaluate(async () => {
        const url = '/ui/format.js';
        const f = await import(url);
        return [f.bytes(999), f.bytes(1234), f.bytes(31_700_000_000), f.bytes(5e12), f.money('12.345', 'USD'), f.money('3', 'EUR'), f.decimalSum(['0.1', '0.2', '1.005']), f.decimalSum(['-0.5', '0.25']), f.count(1234567)];
      });
      assert.deepEqual(shown, ['999 B', '1.23 KB', '31.7 GB', '5.00 TB', '$12.345', '€3.00', '1.305', '-0.25', '1,234,567']);
      await finish({ page, problems });
    });

    it('says what is wrong with no key, a wrong key and an ingest-only key, and signs in with a read key', async () => {
      const { page, problems } = await open('', undefined, { allow: /^(401|403) .*\/v1\/quarantine|status of 40[13]/ });
      await page.waitForSelector('form.signin');
      await page.click('form.signin button[type="submit"]');
      assert.match((await page.textContent('#signin-status'))!, /Paste an API key/);
      await page.fill('#key', 'AAAAAAAA.BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB');
      await page.press('#key', 'Enter');
      await page.waitForSelector('#signin-status .error');
      assert.match((await page.textContent('#signin-status'))!, /not accepted: it is unknown or revoked/);
      await page.fill('#key', ingestKey);
      await page.press('#key', 'Enter');
      await page.waitForFunction(() => /ingest scope/.test(document.querySelector('#signin-status')?.textContent ?? ''));
      assert.equal(await page.evaluate(() => sessionStorage.getItem('bucketmeter.apiKey')), null);
      await shot(page, 'sign-in');
      await page.fill('#key', readKey);
      await page.press('#key', 'Enter');
      await ready(page);
      assert.equal(await page.evaluate(() => sessionStorage.getItem('bucketmeter.apiKey')), readKey);
      assert.equal(await page.evaluate(() => localStorage.length), 0);
      await finish({ page, problems });
    });

    it('overview: totals, charts and top tables equal the API; a range change updates them; interactive time measured', async () => {
      const { page, problems } = await open(`#/overview?${RANGE}`, readKey);
      await page.waitForSelector('[data-card="requests"]');
      const formatted = (fn: string, ...args: unknown[]) => page.evaluate(async ([f, a]) => (await import('/ui/format.js' as string))[f as string](...(a as unknown[])), [fn, args] as const);
      const interactive = await page.evaluate(() => performance.getEntriesByName('bm-overview-numbers')[0]?.startTime);
      assert.ok(typeof interactive === 'number');
      console.log(`# overview interactive (first numbers painted, ${format(EVENTS)} events, 14 days): ${Math.round(interactive)} ms`);
      await ready(page);
      const total = (await api('/v1/usage?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z')).rows[0];
      assert.equal(await card(page, 'requests'), format(total.requests));
      const usage = await painted(page, 'usage');
      assert.ok(usage.points > 0 && usage.pixels > 1000, JSON.stringify(usage));
      if (features.storage) {
        const stored = (await api(`/v1/usage?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z${features.storageParam ? '&storage=true' : ''}`)).rows[0];
        assert.ok(stored.storedBytes > 0);
        assert.equal(await card(page, 'storedBytes'), await formatted('bytes', stored.storedBytes));
      }
      if (features.costs) {
        const cost = await painted(page, 'cost');
        assert.ok(cost.points > 0 && cost.pixels > 1000, JSON.stringify(cost));
        const costRows: { currency: string | null; totalCost: string }[] = (await api('/v1/costs?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z')).rows;
        const currencies = [...new Set(costRows.map((r) => r.currency).filter((c) => c !== null))];
        assert.ok(currencies.length > 0);
        for (const currency of currencies) {
          const sum = await formatted('decimalSum', costRows.filter((r) => r.currency === currency).map((r) => r.totalCost));
          assert.equal(await card(page, `cost-${currency}`), await formatted('money', sum, currency));
        }
      } else {
        assert.match((await page.textContent('[data-slot="cost-chart"]'))!, /not available on this server/);
      }
      const top = (await api('/v1/usage?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z&groupBy=customerId')).rows;
      const rows = await page.$$eval('[data-table="top-customerId"] tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
      assert.equal(rows.length, top.length);
      if (!features.costs) {
        const best = [...top].sort((a, b) => b.requests - a.requests)[0];
        assert.deepEqual(rows[0]!.slice(0, 2), [best.customerId, format(best.requests)]);
      } else {
        // By bucket a value has a row per plan: the table shows their sum.
        const byBucket: { bucket: string; currency: string | null; totalCost: string }[] = (await api('/v1/costs?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z&groupBy=bucket')).rows;
        const shown = await page.$$eval('[data-table="top-bucket"] tbody tr', (trs) => trs.map((tr) => [tr.children[0]!.textContent, tr.children[1]!.textContent]));
        assert.ok(shown.length > 0);
        for (const [bucket, cost] of shown) {
          const own = byBucket.filter((r) => r.bucket === bucket && r.currency !== null);
          assert.equal(cost, await formatted('money', await formatted('decimalSum', own.map((r) => r.totalCost)), own[0]!.currency));
        }
      }
      await shot(page, 'overview');
      // The range form: three days only.
      await applyRange(page, { from: '2026-10-03', to: '2026-10-05' });
      const narrow = (await api('/v1/usage?from=2026-10-03T00:00:00Z&to=2026-10-06T00:00:00Z')).rows[0];
      assert.notEqual(narrow.requests, total.requests);
      assert.equal(await card(page, 'requests'), format(narrow.requests));
      assert.equal(await card(page, 'readBytes'), await page.evaluate(async ([n, url]) => (await import(url)).bytes(n), [narrow.readBytes, '/ui/format.js'] as const));
      // The time zone: the same dates are other instants, and so other numbers.
      await applyRange(page, { tz: 'America/New_York' });
      const zoned = (await api('/v1/usage?from=2026-10-03T04:00:00Z&to=2026-10-06T04:00:00Z')).rows[0];
      assert.notEqual(zoned.requests, narrow.requests);
      assert.equal(await card(page, 'requests'), format(zoned.requests));
      // The state is in the URL: the same link in a new tab shows the same numbers.
      const link = page.url();
      const again = await open(link.slice(link.indexOf('#')), readKey);
      await ready(again.page);
      assert.equal(await card(again.page, 'requests'), format(zoned.requests));
      await finish(again);
      await finish({ page, problems });
    });

    it('overview: asks for stored bytes only where it shows them (the totals, or a stored-bytes measure chosen)', async () => {
      assert.ok(features.storageParam, 'this server offers storage=true');
      /** The overview's /v1/usage requests: groupBy ('' for the totals), and whether they asked for stored bytes. */
      const asked: { groupBy: string; storage: boolean }[] = [];
      const seen = (r: { url(): string }) => {
        const url = new URL(r.url());
        if (url.pathname === '/v1/usage') asked.push({ groupBy: url.searchParams.get('groupBy') ?? '', storage: url.searchParams.get('storage') === 'true' });
      };
      browser.on('request', seen);
      try {
        const { page, problems } = await open(`#/overview?${RANGE}`, readKey);
        await ready(page);
        assert.deepEqual(
          asked.sort((a, b) => a.groupBy.localeCompare(b.groupBy)),
          ['', 'bucket', 'clientId', 'customerId', 'featureId', 'provider'].map((groupBy) => ({ groupBy, storage: groupBy === '' })),
        );
        // A stored-bytes measure chosen: the chart and the top tables ask for it, and show it.
        asked.length = 0;
        await page.selectOption('select[name="metric"]', 'storedBytes');
        await page.waitForFunction(() => new URLSearchParams(location.hash.split('?')[1]).get('metric') === 'storedBytes');
        await ready(page);
        assert.ok(asked.length > 0 && asked.every((a) => a.storage), JSON.stringify(asked));
        const byBucket: { bucket: string; storedBytes: number }[] = (await api('/v1/usage?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z&groupBy=bucket&storage=true')).rows;
        const heads = await page.$$eval('[data-table="top-bucket"] thead th', (ths) => ths.map((th) => th.textContent));
        const column = heads.indexOf('Stored bytes');
        assert.ok(column > 0, JSON.stringify(heads));
        const shown = await page.$$eval('[data-table="top-bucket"] tbody tr', (trs, c) => trs.map((tr) => [tr.children[0]!.textContent, tr.children[c]!.textContent]), column);
        assert.ok(shown.length > 0);
        const format = (n: number) => page.evaluate(async ([v, url]) => (await import(url)).bytes(v), [n, '/ui/format.js'] as const);
        for (const [bucket, stored] of shown) assert.equal(stored, await format(byBucket.find((r) => r.bucket === bucket)!.storedBytes), bucket!);
        await finish({ page, problems });
      } finally {
        browser.off('request', seen);
      }
    });

    it('customer page: filtered to the customer, equal to the API, with charts and its events', async () => {
      const { page, problems } = await open(`#/overview?${RANGE}`, readKey);
      await ready(page);
      await page.click('[data-table="top-customerId"] tbody tr:first-child a');
      await page.waitForFunction(() => location.hash.startsWith('#/customer/'));
      await ready(page);
      const id = decodeURIComponent(/#\/customer\/([^?]+)/.exec(page.url())![1]!);
      const own = (await api(`/v1/usage?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z&customerId=${id}`)).rows[0];
      const all = (await api('/v1/usage?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z')).rows[0];
      assert.ok(own.requests < all.requests);
      assert.equal(await card(page, 'requests'), format(own.requests));
      for (const chart of ['usage-featureId', 'usage-clientId', ...(features.costs ? ['cost-featureId', 'cost-clientId'] : []), ...(features.storage ? ['stored'] : [])]) {
        const drawn = await painted(page, chart);
        assert.ok(drawn.points > 0 && drawn.pixels > 500, `${chart} ${JSON.stringify(drawn)}`);
      }
      const customers = await page.$$eval('[data-table="customer-events"] tbody tr td:nth-child(6)', (tds) => [...new Set(tds.map((td) => td.textContent))]);
      assert.deepEqual(customers, [id]);
      await finish({ page, problems }, 'customer');
    });

    it('event explorer: a filter shows exactly the events the API lists for it', async () => {
      const { page, problems } = await open(`#/events?${RANGE}`, readKey);
      await ready(page);
      await page.fill('form[aria-label="Event filters"] input[name="action"]', 'PutObject');
      await page.fill('form[aria-label="Event filters"] input[name="customerId"]', 'cus-bravo');
      await page.press('form[aria-label="Event filters"] input[name="customerId"]', 'Enter');
      await page.waitForFunction(() => location.hash.includes('action=PutObject'));
      await ready(page);
      const expected = (await api('/v1/events?action=PutObject&customerId=cus-bravo&from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z&limit=100')).events;
      const ids = await page.$$eval('[data-table="events"] tbody tr td:nth-child(11)', (tds) => tds.map((td) => td.textContent));
      assert.ok(expected.length > 0);
      assert.deepEqual(ids, expected.map((e: { eventId: string }) => e.eventId));
      await shot(page, 'events');
      // CSV of the table: the same rows, raw values.
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-csv="events"]')]);
      const text = readFileSync((await download.path())!, 'utf8');
      const lines = text.trim().split('\r\n');
      assert.equal(lines[0], 'timestamp,action,provider,bucket,objectKey,customerId,featureId,clientType,clientId,bytes,eventId,receivedAt');
      assert.equal(lines.length, expected.length + 1);
      assert.equal(lines[1], [expected[0].timestamp, 'PutObject', expected[0].provider, expected[0].bucket, expected[0].objectKey, 'cus-bravo', expected[0].featureId, expected[0].clientType, expected[0].clientId, expected[0].bytes, expected[0].eventId, expected[0].receivedAt].join(','));
      await finish({ page, problems });
    });

    it('object inventory: the listing of a bucket, or a clear "not available" without the endpoint', async () => {
      const { page, problems } = await open(`#/objects?${RANGE}&bucket=media`, readKey);
      await ready(page);
      if (features.objects) {
        const listed = await api('/v1/objects?bucket=media&limit=200');
        const keys = await page.$$eval('[data-table="objects"] tbody tr td:first-child', (tds) => tds.map((td) => td.textContent));
        assert.ok(listed.objects.length > 0);
        assert.deepEqual(keys, listed.objects.map((o: { key: string }) => o.key));
      } else {
        assert.match((await page.textContent('main'))!, /Object inventory \(GET \/v1\/objects\): not available on this server/);
      }
      await finish({ page, problems }, 'objects');
    });

    it("quarantine: the tenant's own entries, and an entry's errors and body shown as text", async () => {
      const { page, problems } = await open(`#/quarantine?${RANGE}`, readKey);
      await ready(page);
      const listed = (await api('/v1/quarantine')).entries;
      assert.equal(listed.length, 2);
      const ids = await page.$$eval('[data-table="quarantine"] tbody tr td:first-child', (tds) => tds.map((td) => Number(td.textContent)));
      assert.deepEqual(ids, listed.map((q: { id: number }) => q.id));
      await shot(page, 'quarantine');
      // The entry whose body holds markup (the older of the two).
      await page.click(`[data-table="quarantine"] a[href^="#/quarantine/${listed[1].id}"]`);
      await page.waitForSelector('pre.body');
      await ready(page);
      assert.match((await page.textContent('pre.body'))!, /"objectKey": "<img src=x id=injected>"/);
      assert.equal(await page.$('#injected'), null);
      assert.match((await page.textContent(`[data-table="quarantine-${listed[1].id}-errors"]`))!, /\/timestamp/);
      await finish({ page, problems }, 'quarantine-entry');
    });

    it('receipts: one row per UTC day, as the API reconciles them', async () => {
      const { page, problems } = await open(`#/receipts?${RANGE}`, readKey);
      await ready(page);
      const api14 = await api('/v1/usage/reconcile?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z');
      const days = await page.$$eval('[data-table="receipts"] tbody tr', (trs) => trs.map((tr) => [tr.children[0]!.textContent, tr.children[6]!.textContent]));
      assert.deepEqual(days, api14.days.map((d: { day: string; requests: number }) => [d.day, format(d.requests)]));
      assert.match((await page.textContent('main'))!, /Every day reconciles/);
      await finish({ page, problems }, 'receipts');
    });

    it('a range changed twice while its reads wait: the reads of the ranges left are aborted, no error shows, the last range shows its own numbers', async () => {
      const { page, problems } = await open(`#/overview?${RANGE}`, readKey);
      await ready(page);
      // The browser holds the reads of the next two ranges (sent on only at the end), so that they still
      // wait when the range changes: all of them but the first range's totals, which are drawn.
      const [first, second] = ['2026-10-02T00:00:00Z', '2026-10-04T00:00:00Z'];
      const held: Route[] = [];
      await page.route('**/v1/**', (route) => {
        const url = new URL(route.request().url());
        const totals = url.pathname === '/v1/usage' && !url.searchParams.has('groupBy');
        const from = url.searchParams.get('from');
        if ((from === first && !totals) || from === second) held.push(route);
        else void route.continue();
      });
      const heldUrls = () => held.map((r) => r.request().url());
      await changeRange(page, { from: '2026-10-02', to: '2026-10-09' });
      // Waiting: the cost totals and chart (when priced), the usage chart, the four top tables.
      const waiting = (features.costs ? 3 : 1) + 4;
      await until("the first range's panels waiting", async () => held.length === waiting, heldUrls);
      const firstTotal = (await api(`/v1/usage?from=${first}&to=2026-10-10T00:00:00Z`)).rows[0];
      assert.equal(await card(page, 'requests'), format(firstTotal.requests));
      await changeRange(page, { from: '2026-10-04', to: '2026-10-05' });
      await until("the second range's totals waiting", async () => held.length === waiting + 1, heldUrls);
      await applyRange(page, { from: '2026-10-06', to: '2026-10-12' });
      const aborted = heldUrls().map((url) => `failed: ${url} net::ERR_ABORTED`).sort();
      await until('the reads of the ranges left aborted', async () => problems.length >= aborted.length, () => problems);
      // Sent on now: a read still waiting would be answered late, over the range on screen.
      for (const route of held) await route.continue().catch(() => {});
      await Promise.all(held.map(async (r) => (await r.request().response())?.finished()));
      await page.evaluate(() => new Promise(requestAnimationFrame));
      // Only the aborted reads failed: no console error, no error reply; and none shown in the page.
      assert.deepEqual(problems.sort(), aborted);
      assert.equal(await page.$('main .notice.error'), null);
      // Every panel shows the last range's numbers.
      const range = 'from=2026-10-06T00:00:00Z&to=2026-10-13T00:00:00Z';
      const total = (await api(`/v1/usage?${range}`)).rows[0];
      assert.ok(total.requests !== firstTotal.requests);
      assert.equal(await card(page, 'requests'), format(total.requests));
      const byProvider: { requests: number }[] = (await api(`/v1/usage?${range}&granularity=day&timeZone=UTC&groupBy=provider`)).rows;
      assert.equal(await page.getAttribute('[data-chart="usage"]', 'data-points'), String(byProvider.filter((r) => r.requests !== 0).length));
      const byCustomer: { customerId: string; requests: number }[] = (await api(`/v1/usage?${range}&groupBy=customerId`)).rows;
      const heads = await page.$$eval('[data-table="top-customerId"] thead th', (ths) => ths.map((th) => th.textContent));
      const shown = await page.$$eval('[data-table="top-customerId"] tbody tr', (trs, c) => trs.map((tr) => [tr.children[0]!.textContent, tr.children[c]!.textContent]), heads.indexOf('Requests'));
      assert.deepEqual(shown.sort(), byCustomer.map((r) => [r.customerId, format(r.requests)]).sort());
      await page.close();
    });

    it('a panel or a view whose read gets no answer says the server could not be reached, not that it refused; the rest of the page works, and Retry reads again', async () => {
      const { page, problems } = await open(`#/receipts?${RANGE}`, readKey);
      await ready(page);
      /** Reads failed as on a cut connection: no answer at all. */
      const aborted: string[] = [];
      const abort = (route: Route) => {
        aborted.push(route.request().url());
        void route.abort('failed');
      };
      // The top customers' usage read.
      const cut = (url: URL) => url.pathname === '/v1/usage' && url.searchParams.get('groupBy') === 'customerId';
      await page.route(cut, abort);
      await page.click('nav a[data-view="overview"]');
      await ready(page);
      const panel = '[data-slot="top-customerId"]';
      assert.match((await page.textContent(panel))!, unreachable);
      assert.doesNotMatch((await page.textContent(panel))!, /refused/);
      assert.equal(await page.$$eval('main .notice.error', (els) => els.length), 1);
      // The other panels show their numbers, and a range change still updates them.
      const total = (await api('/v1/usage?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z')).rows[0];
      assert.equal(await card(page, 'requests'), format(total.requests));
      const byFeature = (await api('/v1/usage?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z&groupBy=featureId')).rows;
      assert.equal(await page.$$eval('[data-table="top-featureId"] tbody tr', (trs) => trs.length), byFeature.length);
      await applyRange(page, { from: '2026-10-03', to: '2026-10-05' });
      const narrow = (await api('/v1/usage?from=2026-10-03T00:00:00Z&to=2026-10-06T00:00:00Z')).rows[0];
      assert.equal(await card(page, 'requests'), format(narrow.requests));
      assert.match((await page.textContent(panel))!, unreachable);
      // Answered again: Retry draws the panel.
      await page.unroute(cut);
      await page.click(`${panel} button.retry`);
      await ready(page);
      const byCustomer = (await api('/v1/usage?from=2026-10-03T00:00:00Z&to=2026-10-06T00:00:00Z&groupBy=customerId')).rows;
      assert.equal(await page.$$eval('[data-table="top-customerId"] tbody tr', (trs) => trs.length), byCustomer.length);
      assert.equal(await page.$('main .notice.error'), null);
      // A view whose one read gets no answer (the receipts' reconcile) says the same; Retry draws it.
      const reconcile = (url: URL) => url.pathname === '/v1/usage/reconcile';
      await page.route(reconcile, abort);
      await page.click('nav a[data-view="receipts"]');
      await ready(page);
      assert.match((await page.textContent('main .notice.error'))!, unreachable);
      await page.unroute(reconcile);
      await page.click('main button.retry');
      await ready(page);
      assert.equal(await page.$$eval('[data-table="receipts"] tbody tr', (trs) => trs.length), 3);
      assert.equal(await page.$('main .notice.error'), null);
      // The only problems: the reads cut (two of the panel, one of the view), each also in the console.
      assert.equal(aborted.length, 3);
      assert.deepEqual(problems.sort(), aborted.flatMap((url) => [`failed: ${url} net::ERR_FAILED`, 'console: Failed to load resource: net::ERR_FAILED']).sort());
      await page.close();
    });

    it('a server that gave no answer when the dashboard opened: the view says so, and Retry draws it once it answers', async () => {
      // The server's OpenAPI document (which endpoints it offers), read before any view, gets no answer.
      await browser.route('**/openapi.json', (route) => route.abort('failed'));
      let opened: Opened;
      try {
        opened = await open(`#/overview?${RANGE}`, readKey);
        await ready(opened.page);
        assert.match((await opened.page.textContent('main .notice.error'))!, unreachable);
      } finally {
        await browser.unroute('**/openapi.json');
      }
      const { page, problems } = opened;
      await page.click('main button.retry');
      await ready(page);
      const total = (await api('/v1/usage?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z')).rows[0];
      assert.equal(await card(page, 'requests'), format(total.requests));
      assert.equal(await page.$('main .notice.error'), null);
      assert.deepEqual(problems, [`failed: ${server.url}/openapi.json net::ERR_FAILED`, 'console: Failed to load resource: net::ERR_FAILED']);
      await page.close();
    });

    it("a panel answered 503 shows the server's own explanation (its problem's title and detail), not a refusal, and offers Retry; a cost too large (422) is a refusal without one", async () => {
      assert.ok(features.costs, 'this server offers /v1/costs');
      const { page, problems } = await open(`#/receipts?${RANGE}`, readKey, { allow: /^(422|503) \S+\/v1\/(costs|usage)\?|status of (422|503)/ });
      await ready(page);
      // The cost chart's read too large to price, the usage chart's past its time budget: answered as the server does.
      const answers = {
        '/v1/costs': { code: 'BM_ERR_COST_TOO_LARGE', detail: 'Pricing 2026-10 needs more than the 1,000,000 attribution key × hour quantities a request may price; a provider filter narrows it.' },
        '/v1/usage': { code: 'BM_ERR_QUERY_TIMEOUT', detail: 'the read took more than its budget of 2000 ms; narrow the query or retry later' },
      } as const;
      const chart = (url: URL) => url.pathname in answers && url.searchParams.get('groupBy') === 'provider' && url.searchParams.get('granularity') === 'day';
      await page.route(chart, (route) => {
        const path = new URL(route.request().url()).pathname as keyof typeof answers;
        const { code, detail } = answers[path];
        const { status, title } = ERRORS[code];
        const body = { type: `urn:bucketmeter:error:${code}`, title, status, detail, code, instance: path };
        const retryAfter: Record<string, string> = status === 503 ? { 'retry-after': '5' } : {};
        void route.fulfill({ status, headers: { 'content-type': 'application/problem+json; charset=utf-8', ...retryAfter }, body: JSON.stringify(body) });
      });
      await page.click('nav a[data-view="overview"]');
      await ready(page);
      assert.equal(await page.textContent('[data-slot="cost-chart"]'), `The server refused this: ${answers['/v1/costs'].detail}`);
      // Out of time on a busy server: asking again may succeed, so Retry is offered; a cost too large would not.
      assert.equal(await page.textContent('[data-slot="usage-chart"]'), `Query took too long: ${answers['/v1/usage'].detail} Retry`);
      assert.equal(await page.$$eval('main .notice.error', (els) => els.length), 2);
      assert.equal(await page.$$eval('[data-slot="cost-chart"] button.retry', (els) => els.length), 0);
      // The server answers again: Retry draws the chart.
      await page.unroute(chart);
      await page.click('[data-slot="usage-chart"] button.retry');
      await page.waitForSelector('[data-slot="usage-chart"] canvas', { timeout: 20_000 });
      await ready(page);
      assert.equal(await page.$$eval('main .notice.error', (els) => els.length), 0);
      const total = (await api('/v1/usage?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z')).rows[0];
      assert.equal(await card(page, 'requests'), format(total.requests));
      await finish({ page, problems });
    });

    it('a panel answered 503 BM_ERR_STORE_UNAVAILABLE (PostgreSQL out of reach) offers Retry, as every 503: asking again may be answered', async () => {
      const { page, problems } = await open(`#/receipts?${RANGE}`, readKey, { allow: /^503 \S+\/v1\/usage\?|status of 503/ });
      await ready(page);
      const code = 'BM_ERR_STORE_UNAVAILABLE';
      const detail = 'The database cannot be reached now: nothing was read. Retry after the Retry-After seconds.';
      const chart = (url: URL) => url.pathname === '/v1/usage' && url.searchParams.get('groupBy') === 'provider' && url.searchParams.get('granularity') === 'day';
      await page.route(chart, (route) => {
        const body = { type: `urn:bucketmeter:error:${code}`, title: ERRORS[code].title, status: 503, detail, code, instance: '/v1/usage' };
        void route.fulfill({ status: 503, headers: { 'content-type': 'application/problem+json; charset=utf-8', 'retry-after': '1' }, body: JSON.stringify(body) });
      });
      await page.click('nav a[data-view="overview"]');
      await ready(page);
      assert.equal(await page.textContent('[data-slot="usage-chart"]'), `${ERRORS[code].title}: ${detail} Retry`);
      await page.unroute(chart);
      await page.click('[data-slot="usage-chart"] button.retry');
      await page.waitForSelector('[data-slot="usage-chart"] canvas', { timeout: 20_000 });
      await finish({ page, problems });
    });

    it('costs not priced yet (503 BM_ERR_COST_NOT_READY): the panel says so, the view is ready meanwhile, and it asks again after Retry-After and draws', async () => {
      assert.ok(features.costs, 'this server offers /v1/costs');
      const { page, problems } = await open(`#/receipts?${RANGE}`, readKey, { allow: /^503 \S+\/v1\/costs\?|status of 503/ });
      await ready(page);
      // The cost chart's read answered as a server still pricing the month does, the first two times.
      let refused = 0;
      const chart = (url: URL) => url.pathname === '/v1/costs' && url.searchParams.get('groupBy') === 'provider' && url.searchParams.get('granularity') === 'day';
      await page.route(chart, (route) => {
        if (refused === 2) return void route.continue();
        refused++;
        const code = 'BM_ERR_COST_NOT_READY';
        const body = { type: `urn:bucketmeter:error:${code}`, title: ERRORS[code].title, status: 503, detail: 'The costs asked for were not priced within 20 s.', code, instance: '/v1/costs' };
        void route.fulfill({ status: 503, headers: { 'content-type': 'application/problem+json; charset=utf-8', 'retry-after': '1' }, body: JSON.stringify(body) });
      });
      await page.click('nav a[data-view="overview"]');
      await ready(page);
      assert.equal(
        await page.textContent('[data-slot="cost-chart"]'),
        'Costs not priced yet: the server is pricing these months for the first time since they changed (minutes on a large store). Asking again in 1 s.',
      );
      assert.equal(await page.$$eval('main .notice.error', (els) => els.length), 0, 'not shown as a failure');
      await page.waitForSelector('[data-slot="cost-chart"] canvas', { timeout: 20_000 });
      assert.equal(refused, 2, 'asked again after each 503');
      const rows = (await api('/v1/costs?from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z&granularity=day&groupBy=provider')).rows;
      assert.ok(rows.length > 0);
      assert.ok((await painted(page, 'cost')).points > 0, 'drawn with data');
      await finish({ page, problems });
    });

    const onPostgres = process.env.TEST_DATABASE_URL ? {} : { skip: 'TEST_DATABASE_URL is not set: PostgreSQL run SKIPPED' };
    it('a filter changed while its read waits (PostgreSQL): the server drops the read left, and the new filter shows its own events', onPostgres, async () => {
      const { url } = await scratchDatabase();
      const storeArgs = ['--database-url', url];
      const writeKey = await createKey('acme', storeArgs);
      const key = await scopedKey('acme', 'read', storeArgs);
      const pgServer = await startServer({ args: storeArgs });
      const locker = new pg.Client({ connectionString: url });
      try {
        await ingest(pgServer.url, writeKey);
        const metrics = async () => {
          const text = await (await fetch(`${pgServer.url}/metrics`)).text();
          return (name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
        };
        // Folded into the rollups and the inventory first: those jobs read the events too.
        const pending = async () => {
          const sample = await metrics();
          return [sample('bucketmeter_usage_pending_events'), sample('bucketmeter_inventory_pending')];
        };
        await until('the history folded', async () => (await pending()).every((n) => n === 0), pending);
        const dropped = async () => {
          const sample = await metrics();
          return ['waiting', 'running'].map((stage) => sample(`bucketmeter_reads_abandoned_total{stage="${stage}"}`));
        };
        // The event explorer's read blocked (not slowed) until the lock goes: another session locks the events.
        await locker.connect();
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE events IN ACCESS EXCLUSIVE MODE');
        // Seen from another session: within the locker's transaction the activity view stays as first read.
        const blocked = () =>
          withPg(url, async (c) => (await c.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT e.seq, e.ts,%'")).rows[0]!.n);
        const { page, problems } = await open(`#/events?${RANGE}&action=PutObject`, key, { base: pgServer.url });
        await until('the first read blocked', async () => (await blocked()) === 1, blocked);
        assert.deepEqual(await dropped(), [0, 0]);
        await page.fill('form[aria-label="Event filters"] input[name="action"]', 'GetObject');
        await page.press('form[aria-label="Event filters"] input[name="action"]', 'Enter');
        await page.waitForFunction(() => location.hash.includes('action=GetObject'));
        // Its query cancelled while it ran.
        await until('the read left dropped', async () => (await dropped())[1] === 1, dropped);
        await locker.query('COMMIT');
        await ready(page);
        assert.deepEqual(await dropped(), [0, 1]);
        const expected = (await request(`${pgServer.url}/v1/events?action=GetObject&from=2026-10-01T00:00:00Z&to=2026-10-15T00:00:00Z&limit=100`, { key })).json.events;
        const ids = await page.$$eval('[data-table="events"] tbody tr td:nth-child(11)', (tds) => tds.map((td) => td.textContent));
        assert.equal(ids.length, 100);
        assert.deepEqual(ids, expected.map((e: { eventId: string }) => e.eventId));
        assert.equal(await page.$('main .notice.error'), null);
        // The one failure: the read left, aborted.
        assert.equal(problems.length, 1, JSON.stringify(problems));
        assert.match(problems[0]!, /^failed: \S+\/v1\/events\?\S*action=PutObject\S* net::ERR_ABORTED$/);
        await page.close();
      } finally {
        await locker.end();
        await pgServer.stop();
      }
    });

    it('says so when a link holds a time zone or a date that is not valid', async () => {
      for (const query of ['from=2026-10-01&to=2026-10-14&tz=Mars/Base', 'from=yesterday&to=2026-10-14&tz=UTC']) {
        const opened = await open(`#/overview?${query}`, readKey);
        await ready(opened.page);
        assert.match((await opened.page.textContent('main .notice.error'))!, /is not valid \(dates as YYYY-MM-DD, a time zone such as Europe\/Berlin\)/);
        await finish(opened);
      }
    });

    it('is usable with the keyboard alone, and readable in a narrow window', async () => {
      const { page, problems } = await open(`#/overview?${RANGE}`, readKey, { width: 380 });
      await ready(page);
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no sideways scrolling at 380 px');
      await shot(page, 'overview-narrow');
      // Tab from the top of the page to the Receipts link, then Enter.
      let focused = '';
      for (let i = 0; i < 12 && focused !== 'Receipts'; i++) {
        await page.keyboard.press('Tab');
        focused = await page.evaluate(() => document.activeElement?.textContent ?? '');
      }
      assert.equal(focused, 'Receipts');
      await page.keyboard.press('Enter');
      await page.waitForSelector('[data-view="receipts"]');
      await ready(page);
      await finish({ page, problems });
    });
  });
}
