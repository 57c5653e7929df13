/**
 * The Prometheus metrics of one process, made once at start (never per event). Counters are fed by
 * decorators (event-log.ts wraps the store's event log; the HTTP driver counts replies); gauges are
 * read at scrape time. Under `serve --workers N` each worker keeps its own and cluster.ts sums them.
 */
import { AggregatorRegistry, Counter, Gauge, Histogram, collectDefaultMetrics } from 'prom-client';
import type { PrometheusContentType } from 'prom-client';
import type { InventoryLag, ReadCounts, UsageLag } from '../store/types.js';
import type { UsagePageCounts } from '../usage/service.js';

export interface MetricsSources {
  /** Events waiting for commit (queued and committing) now. */
  writeQueueEvents: () => number;
  /** How far the object inventory is behind the events. */
  inventoryLag: () => Promise<InventoryLag>;
  /** How far the usage rollups are behind the events. */
  usageLag: () => Promise<UsageLag>;
  /** The store's reads waiting now, and those whose caller left. */
  readCounts: () => ReadCounts;
  /** /v1/usage's kept answers and its continuation pages. */
  usagePages: () => UsagePageCounts;
}

export interface Metrics {
  /** An AggregatorRegistry: in a cluster worker it also answers the primary's requests for its metrics. */
  readonly registry: AggregatorRegistry<PrometheusContentType>;
  readonly events: Counter<'tenant' | 'action' | 'outcome'>;
  readonly httpRequests: Counter<'route' | 'method' | 'status'>;
  readonly commitDuration: Histogram;
  readonly commitEvents: Histogram;
  readonly quarantineEntries: Counter<'tenant' | 'code'>;
  readonly storeErrors: Counter<'operation'>;
}

export function createMetrics(sources: MetricsSources): Metrics {
  const registry = new AggregatorRegistry<PrometheusContentType>();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  // Summed across workers like everything else: a scrape says how many processes it covers.
  new Gauge({ name: 'bucketmeter_processes', help: 'Serving processes whose metrics this scrape sums (the workers of serve --workers N).', registers }).set(1);
  // A gauge read from a count kept elsewhere (the committer, the store, the usage service) at each scrape.
  const readGauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read());
      },
    });
  readGauge('bucketmeter_write_queue_events', 'Events waiting for commit (queued and committing).', () => sources.writeQueueEvents());
  // One store behind every worker: its lag is reported once (the highest reading), never summed. A
  // store that cannot answer now keeps the last reading: the scrape itself must not fail.
  const storeGauge = (name: string, help: string, read: () => Promise<number>) =>
    new Gauge({
      name,
      help,
      registers,
      aggregator: 'max',
      async collect() {
        const value = await read().catch(() => undefined);
        if (value !== undefined) this.set(value);
      },
    });
  // The two gauges of a pair are collected at once: they share one store read.
  const shared = <T>(read: () => Promise<T>) => {
    let inFlight: Promise<T> | undefined;
    return () =>
      (inFlight ??= read().finally(() => {
        inFlight = undefined;
      }));
  };
  const inventoryLag = shared(sources.inventoryLag);
  const usageLag = shared(sources.usageLag);
  storeGauge('bucketmeter_inventory_pending', 'Event commits whose changes the object inventory has not applied yet (a read applies them first).', async () => (await inventoryLag()).pending);
  storeGauge('bucketmeter_inventory_lag_seconds', 'Age of the oldest event commit the object inventory has not applied yet; 0 when caught up.', async () => (await inventoryLag()).oldestSeconds);
  storeGauge('bucketmeter_usage_pending_events', 'Events stored and not folded into the usage rollups yet (a usage read folds them first).', async () => (await usageLag()).pendingEvents);
  storeGauge('bucketmeter_usage_lag_seconds', 'Age of the oldest event not folded into the usage rollups yet; 0 when caught up.', async () => (await usageLag()).oldestSeconds);
  // A counter by label brought up, at each scrape, to counts kept elsewhere.
  const countedCounter = <L extends string>(name: string, help: string, label: string, read: () => Record<L, number>) => {
    const counted = new Map<L, number>();
    return new Counter({
      name,
      help,
      labelNames: [label],
      registers,
      collect() {
        for (const [value, count] of Object.entries(read()) as [L, number][]) {
          this.inc({ [label]: value }, count - (counted.get(value) ?? 0));
          counted.set(value, count);
        }
      },
    });
  };
  readGauge('bucketmeter_reads_waiting', 'Store reads waiting for a reader (SQLite: a reader thread; PostgreSQL: a pooled connection, writes included).', () => sources.readCounts().waiting);
  countedCounter('bucketmeter_reads_abandoned_total', 'Store reads whose HTTP client left before the answer: stage waiting, never run; stage running, stopped.', 'stage', () => {
    const { abandonedWaiting, abandonedRunning } = sources.readCounts();
    return { waiting: abandonedWaiting, running: abandonedRunning };
  });
  readGauge('bucketmeter_usage_kept_rows', 'Weight of the /v1/usage answers kept for reuse, in rows (an answer: its rows, its windows and 64 for itself).', () => sources.usagePages().keptRows);
  countedCounter('bucketmeter_usage_first_pages_total', 'Pages of /v1/usage asked without a cursor: source kept, from an answer kept at an unchanged version (event count and rebuilds); computed, the answer computed.', 'source', () => sources.usagePages().first);
  countedCounter('bucketmeter_usage_next_pages_total', 'Pages of /v1/usage asked with a cursor: source kept, sliced from a kept answer; computed, the answer computed again.', 'source', () => sources.usagePages().next);
  return {
    registry,
    events: new Counter({
      name: 'bucketmeter_events_total',
      help: 'Events by outcome: accepted (stored), duplicate (eventId already stored), rejected (invalid, quarantined). tenant is the tenant id.',
      labelNames: ['tenant', 'action', 'outcome'] as const,
      registers,
    }),
    httpRequests: new Counter({
      name: 'bucketmeter_http_requests_total',
      help: 'HTTP replies by route template (unmatched for unknown paths), method and status.',
      labelNames: ['route', 'method', 'status'] as const,
      registers,
    }),
    commitDuration: new Histogram({
      name: 'bucketmeter_commit_duration_seconds',
      help: 'Time of one group commit, from hand-over to the store until durable.',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    commitEvents: new Histogram({
      name: 'bucketmeter_commit_events',
      help: 'Events and quarantine entries in one group commit.',
      buckets: [1, 2, 5, 10, 50, 100, 500, 1000, 5000, 10000],
      registers,
    }),
    quarantineEntries: new Counter({
      name: 'bucketmeter_quarantine_entries_total',
      help: 'Quarantine entries written, by error code (an invalid event, or a whole body refused).',
      labelNames: ['tenant', 'code'] as const,
      registers,
    }),
    storeErrors: new Counter({
      name: 'bucketmeter_store_errors_total',
      help: 'Store operations that failed (commit: answered 503; list: a read that failed).',
      labelNames: ['operation'] as const,
      registers,
    }),
  };
}
