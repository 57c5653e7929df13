/** The telemetry service: counts what collectors report and logs it at its level, never a key. */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { TelemetryService } from '../../src/telemetry/service.js';
import {
  COLLECTOR_INSTANCE_ID,
  COLLECTOR_USER_AGENT,
  EXTRACTION_ISSUES_REPORT,
  METRICS_REPORT,
  SHUTDOWN_REPORT,
  STARTUP_REPORT,
  invalidApiKeyReport,
} from '../support/collector-telemetry.js';

function capture(): { service: TelemetryService; lines: () => Record<string, unknown>[]; text: () => string } {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  const service = new TelemetryService(pino({ level: 'trace' }, sink));
  return { service, text: () => text, lines: () => text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

const origin = { address: '127.0.0.1', userAgent: COLLECTOR_USER_AGENT };
const body = (report: unknown) => Buffer.from(JSON.stringify(report));
const KEY = 'bmk_ThisIsTheCollectorsKeyAndMustNeverBeLogged42';

describe('TelemetryService', () => {
  it('invalidApiKey: a warning naming the problems and the instance, never the key', () => {
    const { service, lines, text } = capture();
    assert.equal(service.report('invalidApiKey', body(invalidApiKeyReport(KEY)), origin), true);
    const [line] = lines();
    assert.equal(line!.level, 40);
    assert.equal(line!.instanceId, COLLECTOR_INSTANCE_ID);
    assert.deepEqual(line!.problems, ['API_KEY_INVALID_FORMAT', 'PING_FAILED']);
    assert.ok(!text().includes(KEY) && !text().includes(KEY.slice(4, 20)), text());
    assert.equal(service.counters().reports.invalidApiKey, 1);
  });

  it('lifecycle: one info line each for startup and shutdown', () => {
    const { service, lines } = capture();
    service.report('lifecycle', body(STARTUP_REPORT), origin);
    service.report('lifecycle', body(SHUTDOWN_REPORT), origin);
    assert.deepEqual(lines().map((l) => [l.level, l.eventType]), [[30, 'startup'], [30, 'shutdown']]);
    assert.deepEqual(lines()[0]!.warnings, ['EMPTY_USER_ATTRS']);
    assert.deepEqual(lines()[1]!.metricsTotal, SHUTDOWN_REPORT.metricsTotal);
    assert.equal(service.counters().reports.lifecycle, 2);
  });

  it('extractionIssues: counts the events and lists the issue types, not the events', () => {
    const { service, lines, text } = capture();
    service.report('extractionIssues', body(EXTRACTION_ISSUES_REPORT), origin);
    const [line] = lines();
    assert.deepEqual([line!.level, line!.events, line!.issues], [40, 2, ['UNKNOWN_ACTION_TYPE', 'EXTRACTION_ERROR']]);
    assert.ok(!text().includes('PutBucketTagging'), 'event contents are not logged');
    assert.equal(service.counters().collectorEventsWithIssues, 2);
  });

  it('metricsIncremental: adds the dropped events to a counter, warns only when some were dropped', () => {
    const { service, lines } = capture();
    service.report('metricsIncremental', body(METRICS_REPORT), origin);
    service.report('metricsIncremental', body({ ...METRICS_REPORT, metricsIncremental: { events_sent: 9 } }), origin);
    assert.deepEqual(lines().map((l) => [l.level, l.dropped]), [[40, 20], [20, undefined]]);
    assert.deepEqual(service.counters(), {
      reports: { lifecycle: 0, invalidApiKey: 0, extractionIssues: 0, metricsIncremental: 2 },
      unreadable: 0,
      collectorEventsDropped: 20,
      collectorEventsWithIssues: 0,
    });
  });

  it('refuses a body that is not a JSON object, logging nothing of it', () => {
    const { service, text } = capture();
    for (const raw of [`{"apiKey":"${KEY}"`, '[1]', 'null', '']) assert.equal(service.report('invalidApiKey', Buffer.from(raw), origin), false);
    assert.equal(text(), '');
    assert.equal(service.counters().unreadable, 4);
    assert.equal(service.counters().reports.invalidApiKey, 0);
  });

  it('keeps only short token-like ids and figures, whatever a report holds', () => {
    const { service, lines } = capture();
    service.report('metricsIncremental', body({ instanceId: 'x'.repeat(65), eventType: 'a b', metricsIncremental: { events_dropped_x: -1, 'Bad Name': 3, events_dropped_y: 1.5, events_dropped_z: 2 } }), origin);
    const [line] = lines();
    assert.deepEqual([line!.instanceId, line!.eventType, line!.metrics], [undefined, undefined, { events_dropped_z: 2 }]);
  });
});
