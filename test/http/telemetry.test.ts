/**
 * The Java collector's telemetry routes over real HTTP, against a real server process whose every log
 * line (at trace level) is captured: 2xx for each report as the collector sends it, with or without a
 * key; bounded bodies; a per-address rate limit; and no key in any reply or log line.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createKey, request, startServer, tempDir } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';
import {
  COLLECTOR_USER_AGENT,
  EXTRACTION_ISSUES_REPORT,
  METRICS_REPORT,
  SHUTDOWN_REPORT,
  STARTUP_REPORT,
  invalidApiKeyReport,
} from '../support/collector-telemetry.js';

/** A key in the format the collector checks, but unknown to the server. */
const UNKNOWN_KEY = 'AbCd1234.' + 'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlq'.slice(0, 48);

describe('telemetry routes', () => {
  let server: ServerProcess;
  let key: string;
  const replies: string[] = [];

  before(async () => {
    const dataDir = tempDir();
    // Not the key printed on first start: that one is in the output by design.
    server = await startServer({ dataDir, env: { LOG_LEVEL: 'trace' } });
    key = await createKey('collector', ['--data-dir', dataDir]);
  });

  async function post(path: string, body: unknown, withKey?: string) {
    const reply = await request(`${server.url}${path}`, { body, ...(withKey ? { key: withKey } : {}), headers: { 'user-agent': COLLECTOR_USER_AGENT } });
    replies.push(reply.text);
    return reply;
  }

  it('answers each of the collector\'s reports 200, with or without a key, known or not', async () => {
    const reports: [string, unknown, string | undefined][] = [
      ['/telemetry/invalidApiKey', invalidApiKeyReport(UNKNOWN_KEY), undefined],
      ['/telemetry/invalidApiKey', invalidApiKeyReport(key), undefined],
      ['/telemetry/lifecycle', STARTUP_REPORT, key],
      ['/telemetry/lifecycle', SHUTDOWN_REPORT, UNKNOWN_KEY],
      ['/telemetry/extractionIssues', EXTRACTION_ISSUES_REPORT, key],
      ['/telemetry/metricsIncremental', METRICS_REPORT, key],
    ];
    for (const [path, body, withKey] of reports) {
      const reply = await post(path, body, withKey);
      assert.equal(reply.status, 200, `${path}: ${reply.text}`);
      assert.deepEqual(reply.json, { received: true });
    }
  });

  it('refuses a body over 1 MiB (413) and one that is not a JSON object (400), without quoting it', async () => {
    const big = await post('/telemetry/extractionIssues', { apiKey: key, pad: 'x'.repeat(1024 * 1024) }, key);
    assert.equal(big.status, 413);
    const notJson = await request(`${server.url}/telemetry/invalidApiKey`, { raw: `{"apiKey":"${key}"`, headers: { 'content-type': 'application/json' } });
    replies.push(notJson.text);
    assert.equal(notJson.status, 400);
    assert.equal(notJson.json.code, 'BM_ERR_BODY_NOT_OBJECT');
  });

  it('rate-limits per client address: 429 with Retry-After past the limit', async () => {
    const statuses = await Promise.all(Array.from({ length: 200 }, () => post('/telemetry/metricsIncremental', METRICS_REPORT, key).then((r) => [r.status, r.headers.get('retry-after')] as const)));
    const limited = statuses.filter(([status]) => status === 429);
    assert.ok(limited.length > 0, 'some requests are limited');
    assert.ok(statuses.every(([status]) => status === 200 || status === 429));
    assert.ok(limited.every(([, retryAfter]) => Number(retryAfter) >= 1));
  });

  it('keeps 404 for other telemetry paths', async () => {
    assert.equal((await post('/telemetry/other', {}, key)).status, 404);
  });

  describe('after the server stops', () => {
    before(() => server.stop());

    it('no reply and no log line holds a key, or the secret part of one', () => {
      const output = server.output();
      for (const secret of [key, key.split('.')[1]!, UNKNOWN_KEY, UNKNOWN_KEY.split('.')[1]!]) {
        assert.ok(!output.includes(secret), `log holds ${secret.slice(0, 4)}…`);
        for (const text of replies) assert.ok(!text.includes(secret), `a reply holds ${secret.slice(0, 4)}…`);
      }
    });

    it('logged what the collector reported, at its level', () => {
      const lines = server.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
      const invalid = lines.filter((l) => l.telemetry === 'invalidApiKey');
      assert.equal(invalid.length, 2);
      assert.ok(invalid.every((l) => l.level === 40 && l.problems.includes('API_KEY_INVALID_FORMAT')));
      assert.ok(lines.some((l) => l.telemetry === 'lifecycle' && l.level === 30 && l.eventType === 'startup'));
      assert.ok(lines.some((l) => l.telemetry === 'extractionIssues' && l.level === 40 && l.events === 2));
      assert.ok(lines.some((l) => l.telemetry === 'metricsIncremental' && l.level === 40 && l.dropped === 20));
    });
  });

  after(() => server.stop());
});
