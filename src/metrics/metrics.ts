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
  new Gauge({
    name: 'bucketmeter_write_queue_events',
    help: 'Events waiting for commit (queued and committing).',
    registers,
    collect() {
      this.set(sources.writeQueueEvents());
    },
  });
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
  new Gauge({
    name: 'bucketmeter_reads_waiting',
    help: 'Store reads waiting for a reader (SQLite: a reader thread; PostgreSQL: a pooled connection, writes included).',
    registers,
    collect() {
      this.set(sources.readCounts().waiting);
    },
  });
  // The store counts; the counter is brought up to its count at each scrape.
  const counted = { waiting: 0, running: 0 };
  new Counter({
    name: 'bucketmeter_reads_abandoned_total',
    help: 'Store reads whose HTTP client left before the answer: stage waiting, never run; stage running, stopped.',
    labelNames: ['stage'] as const,
    registers,
    collect() {
      const { abandonedWaiting, abandonedRunning } = sources.readCounts();
      this.inc({ stage: 'waiting' }, abandonedWaiting - counted.waiting);
      this.inc({ stage: 'running' }, abandonedRunning - counted.running);
      counted.waiting = abandonedWaiting;
      counted.running = abandonedRunning;
    },
  });
  new Gauge({
    name: 'bucketmeter_usage_kept_rows',
    help: 'Rows of /v1/usage answers kept for their next pages.',
    registers,
    collect() {
      this.set(sources.usagePages().keptRows);
    },
  });
  const pages = { kept: 0, computed: 0 };
  new Counter({
    name: 'bucketmeter_usage_next_pages_total',
    help: 'Pages of /v1/usage asked with a cursor: source kept, sliced from a kept answer; computed, the answer computed again.',
    labelNames: ['source'] as const,
    registers,
    collect() {
      const { fromKept, computed } = sources.usagePages();
      this.inc({ source: 'kept' }, fromKept - pages.kept);
      this.inc({ source: 'computed' }, computed - pages.computed);
      pages.kept = fromKept;
      pages.computed = computed;
    },
  });
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
