/**
 * Assembles a running node from its configuration: store → committer → ingest service → HTTP server.
 * Everything is built once here and handed down; nothing below reaches back up.
 */
import { ObjectsService } from './inventory/objects.js';
import cluster from 'node:cluster';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { Authenticator } from './auth/authenticator.js';
import { generateKey } from './auth/keys.js';
import { RateLimiter } from './auth/rate-limit.js';
import type { Config } from './config.js';
import { redactUrl } from './config.js';
import { createEventValidator } from './events/validate.js';
import type { EventValidator } from './events/validate.js';
import { HealthService } from './health/service.js';
import { listenMetrics } from './http/metrics.js';
import { buildHttpServer, idleTimeoutMs } from './http/server.js';
import { Committer } from './ingest/committer.js';
import { QuarantineQuota } from './ingest/quarantine-quota.js';
import { IngestService } from './ingest/service.js';
import { processScraper } from './metrics/cluster.js';
import { instrumentEventLog } from './metrics/event-log.js';
import { createMetrics } from './metrics/metrics.js';
import { telemetryMetrics } from './metrics/telemetry.js';
import type { Metrics } from './metrics/metrics.js';
import { EventQueryService } from './query/events.js';
import { SetupError } from './setup-error.js';
import { FOLD_BEFORE_READ_MS, type EventLog, type Store } from './store/types.js';
import { TelemetryService } from './telemetry/service.js';
import { UsageService } from './usage/service.js';
import { CostThread } from './costs/thread.js';
import { loadPricing } from './pricing/setup.js';
import { QuarantineService } from './quarantine/service.js';
import { throttledWarn } from './logging/throttle.js';

/** How often the job owner folds new events into the usage rollups (a check of two counters or one index when nothing is new). */
const CATCH_UP_MS = 250;
/**
 * Set by tests only: the background catch-up first runs this many ms after
 * start (so a process can be killed with events committed and not folded), instead of CATCH_UP_MS.
 */
const CATCH_UP_DELAY = 'BUCKETMETER_TEST_CATCH_UP_DELAY_MS';

/** `destination` 2 (stderr) for CLI commands, whose stdout carries only their output. */
export function createLogger(level: string, destination: 1 | 2 = 1): Logger {
  return pino({
    level,
    // Keys must never reach a log, whatever a future log line decides to include.
    redact: { paths: ['req.headers["x-api-key"]', 'headers["x-api-key"]', '*.headers["x-api-key"]', 'key', 'apiKey'], censor: '[redacted]' },
  }, pino.destination({ dest: destination, sync: true }));
}

/** Where the embedded database lives. */
export function sqlitePath(config: Config): string {
  return resolve(config.dataDir, 'bucketmeter.db');
}

/**
 * Set to 1 by the bench only, to measure ingest without usage rollups and receipts (the cost they
 * add). Not a setting: a store run with it has usage figures that verify reports as wrong.
 */
const BENCH_NO_USAGE = 'BUCKETMETER_BENCH_NO_USAGE';
/**
 * Set to 1 by the bench only, to measure ingest with the usage rollups alone: events are stored
 * without the inventory's feed, so stored bytes and /v1/objects stay empty.
 */
const BENCH_NO_INVENTORY = 'BUCKETMETER_BENCH_NO_INVENTORY';
/** How long before the server's idle timeout a cost request still being priced is answered 503. */
const COST_ANSWER_MARGIN_MS = 5000;

/**
 * Opens the configured store. `create: false` (every command but `serve`) refuses to create an
 * SQLite database that is not there: run from the wrong folder, a command would otherwise make an
 * empty one and work on it, and the server would not know its keys.
 *
 * A server's usage read folds a backlog for at most half its idle timeout (twice
 * --request-timeout-ms), up to FOLD_BEFORE_READ_MS, then answers 503 while the background fold works
 * it off. A command has no background fold: its reads fold whatever is pending (`serve: false`).
 */
export async function openStore(config: Config, logger: Logger, options: { create: boolean; serve?: boolean } = { create: true, serve: true }): Promise<Store> {
  const usage = process.env[BENCH_NO_USAGE] !== '1';
  const inventory = process.env[BENCH_NO_INVENTORY] !== '1';
  const foldBeforeReadMs = options.serve === true ? Math.min(FOLD_BEFORE_READ_MS, config.requestTimeoutMs) : Number.POSITIVE_INFINITY;
  if (config.databaseUrl !== undefined) {
    const { openPostgresStore } = await import('./store/postgres/index.js');
    logger.debug({ url: redactUrl(config.databaseUrl) }, 'opening PostgreSQL store');
    return openPostgresStore({ url: config.databaseUrl, poolMax: config.pgPoolMax, logger, usage, inventory, foldBeforeReadMs });
  }
  const { openSqliteStore } = await import('./store/sqlite/index.js');
  const path = sqlitePath(config);
  if (!existsSync(path)) {
    if (!options.create) {
      throw new SetupError(`no database at ${path}: give the server's --data-dir (or BUCKETMETER_DATA_DIR), or start \`bucketmeter serve\` once to create it`);
    }
    // Owner only: the database holds every tenant's events and keys' hashes. SQLite gives its WAL
    // and shared-memory files the database file's mode.
    mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
    closeSync(openSync(path, 'a', 0o600));
  }
  const store = await openSqliteStore({ path, logger, maxGroupEvents: config.commitMaxEvents, usage, inventory, foldBeforeReadMs, readBudgetMs: config.readBudgetMs });
  // What an operator checks first after a surprise: that every commit is fsynced (synchronous 2 = FULL).
  logger.debug({ path, ...(await store.settings()).writer }, 'SQLite store open');
  return store;
}

/** On the very first start (no key at all), creates tenant `default` with one key; returns the key to print once. */
export async function bootstrapKey(store: Store): Promise<string | undefined> {
  const generated = generateKey();
  const created = await store.keys.createIfNone({ id: generated.id, tenantName: 'default', hash: generated.hash, createdAt: Math.floor(Date.now() / 1000) });
  return created ? generated.key : undefined;
}

/** The batch size to recommend: larger batches when the write queue fills, so clients send fewer requests. */
export function recommendBatchSize(maxBatchEvents: number, load: number): number {
  const clientCap = 1000; // existing clients never send more than 1,000 per batch
  const base = load > 0.5 ? 1000 : 500;
  return Math.max(1, Math.min(base, clientCap, maxBatchEvents));
}

const COMMIT_FAILURE_MEMORY_MS = 5000;
/**
 * Units handed to the SQLite writer before their predecessors are committed. The writer merges those
 * waiting into its next transaction, so handing them over early costs nothing and keeps it busy.
 */
const SQLITE_COMMITS_IN_FLIGHT = 8;
/**
 * PostgreSQL commits at once per process. Units merged while these run make fewer, larger statements:
 * on the bench machine, 3 in flight cost PostgreSQL 10 µs of CPU per event where 7 cost 15 µs.
 */
const PG_COMMITS_IN_FLIGHT = 3;
const CLOSE_SWEEP_MS = 50;

export interface Node {
  app: FastifyInstance;
  store: Store;
  committer: Committer;
  /** The collectors' telemetry counters (for a /metrics endpoint). */
  telemetry: TelemetryService;
  /** Stops accepting, finishes in-flight requests, flushes the committer, closes the store. */
  close(): Promise<void>;
}

/** The group committer in front of the store's event log: every write, ingested or replayed, goes through one. */
export function createCommitter(config: Config, logger: Logger, store: Store, log: EventLog = store): Committer {
  const commitFailed = throttledWarn(logger);
  return new Committer({
    commit: (unit, deadline) => log.commit(unit, deadline),
    maxGroupEvents: config.commitMaxEvents,
    maxQueueEvents: config.queueMaxEvents,
    // One connection stays free for key lookups and reads.
    maxInFlight: store.backend === 'sqlite' ? SQLITE_COMMITS_IN_FLIGHT : Math.max(1, Math.min(PG_COMMITS_IN_FLIGHT, config.pgPoolMax - 1)),
    // While the store is down every commit fails, hundreds a second: one line per interval is enough.
    onCommitError: (err) => commitFailed.warn({ err }, 'commit failed; requests answered 503'),
  });
}

export function createValidator(config: Config): EventValidator {
  return createEventValidator({ maxFutureSeconds: config.maxFutureSeconds, maxExtraBytes: config.maxExtraBytes });
}

export async function startNode(config: Config, logger: Logger, store: Store): Promise<Node> {
  const metrics: Metrics = createMetrics({
    writeQueueEvents: () => committer.waitingEvents,
    inventoryLag: () => store.inventory.lag(),
    usageLag: () => store.usage.lag(),
    readCounts: () => store.readCounts(),
    usagePages: () => usage.pageCounts(),
  });
  const log = instrumentEventLog(store, metrics);
  const committer = createCommitter(config, logger, store, log);
  const scrape = processScraper(metrics);
  // Under --workers the primary holds the separate listener (cli/main.ts): it sums every worker.
  const ownListener = config.metricsPort !== undefined;
  const validator = createValidator(config);
  const ingest = new IngestService({
    committer,
    validator,
    maxBatchEvents: config.maxBatchEvents,
    quarantineMaxBytes: config.quarantineMaxBytes,
    quota: new QuarantineQuota({ perDay: config.quarantineMaxPerDay, countSince: (tenantId, since) => store.quarantine.countSince(tenantId, since) }),
    maxRejectedDetailed: config.batchReplyMaxRejected,
  });
  const telemetry = new TelemetryService(logger);
  telemetryMetrics(metrics.registry, () => telemetry.counters());
  // Checked here, so that a node never starts on a broken catalogue; the cost thread loads its own.
  loadPricing(config);
  const usage = new UsageService(store.usage, store.inventory, { rows: config.usageKeptRows });
  // Past this a cost request gets 503 with Retry-After, the pricing going on: just before the server's
  // idle timeout (twice --request-timeout-ms, which would cut it with no answer). Not sooner: for the
  // current month of a tenant still sending events, a pricing nobody waits for stops (its month has
  // changed), so a month priced in under this is answered only by the request that waits for it.
  const answerWithinMs = Math.max(1000, idleTimeoutMs(config.requestTimeoutMs) - COST_ANSWER_MARGIN_MS);
  const costs = new CostThread(store.threadReads, { prices: config.prices, bucketPlans: config.bucketPlans, costHeapMb: config.costHeapMb, answerWithinMs });
  // Load balancers poll /healthz every few seconds: an outage logs its cause once per interval.
  const healthFailed = throttledWarn(logger);
  const app = await buildHttpServer({
    logger,
    ingest,
    telemetry,
    events: new EventQueryService(log),
    // Long enough to span the gaps between commits under load; short enough that a node taken out of
    // rotation (and so sent no writes) reports healthy again soon after the store recovers.
    health: new HealthService({ store, commitsFailing: () => committer.failedWithin(COMMIT_FAILURE_MEMORY_MS), onFailure: (err) => healthFailed.warn({ err }, 'health check failed') }),
    usage,
    objects: new ObjectsService(store.inventory),
    costs,
    quarantine: new QuarantineService(store.quarantine),
    authenticator: new Authenticator({ keys: store.keys, cacheSeconds: config.keyCacheSeconds }),
    ...(config.rateLimit > 0 ? { rateLimiter: new RateLimiter(config.rateLimit) } : {}),
    recommendedBatchSize: () => recommendBatchSize(config.maxBatchEvents, committer.load),
    limits: { maxBodyBytes: config.maxBodyBytes, quarantineMaxBytes: config.quarantineMaxBytes },
    requestTimeoutMs: config.requestTimeoutMs,
    accessLog: config.accessLog,
    ...(config.tlsCert && config.tlsKey ? { tls: { cert: readFileSync(config.tlsCert), key: readFileSync(config.tlsKey) } } : {}),
    metrics: { requests: metrics.httpRequests, ...(ownListener ? {} : { scrape }) },
  });

  // On every node and cluster worker, but run by the one that owns the background jobs.
  const purge = async () => {
    if (config.quarantineRetentionDays === 0 || !(await store.claimJobs())) return;
    const before = Math.floor(Date.now() / 1000) - config.quarantineRetentionDays * 86400;
    const removed = await store.quarantine.purgeBefore(before).catch((err: unknown) => {
      logger.warn({ err }, 'quarantine retention purge failed; will retry');
      return 0;
    });
    if (removed > 0) logger.info({ removed }, 'quarantine entries past retention deleted');
  };
  await purge();
  const purgeTimer = setInterval(() => void purge(), 3600_000).unref();
  // Derived data, kept up by the job owner in the background so that reads seldom have much to fold
  // or apply first. Both catch-ups are called four times a second, and `background` lets the store
  // pace them while it is committing: a fold costs per rollup row it writes (PostgreSQL: at most once
  // a second; SQLite's writer also asks for a fold when its sums fill), an inventory catch-up per key
  // history it replays (store/background-pace.ts: a tenth of its thread while committing, all of it
  // once commits pause). A read folds or applies whatever is pending itself.
  let catchUpTimer: NodeJS.Timeout | undefined;
  let stopping = false;
  // While the store is down every catch-up fails, four a second.
  const usageFailed = throttledWarn(logger);
  const inventoryFailed = throttledWarn(logger);
  const catchUp = async () => {
    if (await store.claimJobs().catch(() => false)) {
      await store.usage.catchUp({ background: true }).catch((err: unknown) => usageFailed.warn({ err }, 'usage catch-up failed; will retry'));
      await store.inventory.catchUp({ background: true }).catch((err: unknown) => inventoryFailed.warn({ err }, 'inventory catch-up failed; will retry'));
    }
    if (!stopping) catchUpTimer = setTimeout(() => void catchUp(), CATCH_UP_MS).unref();
  };
  catchUpTimer = setTimeout(() => void catchUp(), Number(process.env[CATCH_UP_DELAY] ?? CATCH_UP_MS)).unref();

  await app.listen({ port: config.port, host: config.host });
  const metricsServer = config.metricsPort !== undefined && !cluster.isWorker ? await listenMetrics({ port: config.metricsPort, host: config.host, scrape }) : undefined;
  if (metricsServer !== undefined) logger.info({ port: (metricsServer.address() as AddressInfo).port }, 'metrics listening');
  let closing: Promise<void> | undefined;
  return {
    app,
    store,
    committer,
    telemetry,
    close: () =>
      (closing ??= (async () => {
        clearInterval(purgeTimer);
        stopping = true;
        clearTimeout(catchUpTimer);
        metricsServer?.close();
        // Node closes the connections idle when the stop begins, not those whose request ends after:
        // each would hold the stop for the keep-alive timeout (65 s).
        const sweep = setInterval(() => app.server.closeIdleConnections(), CLOSE_SWEEP_MS);
        try {
          await app.close();
        } finally {
          clearInterval(sweep);
        }
        await costs.close();
        await committer.close();
        await store.close();
      })()),
  };
}
