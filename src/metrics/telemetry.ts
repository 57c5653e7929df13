/**
 * What the Java collectors report about themselves (/telemetry/*, counted by the telemetry service)
 * as Prometheus counters, read at scrape time: the service keeps its counts, these only show them.
 */
import { Counter } from 'prom-client';
import type { Registry } from 'prom-client';
import type { TelemetryCounters } from '../telemetry/service.js';

/** A counter that follows a count kept elsewhere: each scrape adds what was counted since the last. */
function follow(registry: Registry, name: string, help: string, read: () => Record<string, number>, label: string): void {
  const seen = new Map<string, number>();
  new Counter({
    name,
    help,
    labelNames: [label],
    registers: [registry],
    collect() {
      for (const [value, n] of Object.entries(read())) {
        this.inc({ [label]: value }, n - (seen.get(value) ?? 0));
        seen.set(value, n);
      }
    },
  });
}

export function telemetryMetrics(registry: Registry, counters: () => TelemetryCounters): void {
  follow(registry, 'bucketmeter_collector_reports_total', "Java collectors' /telemetry reports read, by kind (unreadable: not a JSON object, answered 400).", () => ({ ...counters().reports, unreadable: counters().unreadable }), 'kind');
  follow(
    registry,
    'bucketmeter_collector_events_total',
    'Events the Java collectors say they dropped (dropped) or could not extract cleanly (with_issues).',
    () => ({ dropped: counters().collectorEventsDropped, with_issues: counters().collectorEventsWithIssues }),
    'outcome',
  );
}
