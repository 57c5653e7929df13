/**
 * What a bench run measures: the phases, their loads, and the targets the figures are held to.
 * Loads are fixed here (not derived from the machine) so that results of different machines compare.
 */
import type { StreamSpec } from './loadgen.js';
import { MIX_SEED } from './mix.js';

/** Single events: 64 connections, as the targets are stated. */
export const SINGLE_CONNECTIONS = 64;
/**
 * Batches: 8 connections keep a request being parsed while another group commits, which is all group
 * commit needs; more would only add queueing latency on one core.
 */
export const BATCH_CONNECTIONS = 8;

/** The three request streams. Each has its own seed; the raw insert baselines reuse the 1,000 one. */
export const STREAMS = {
  single: { batch: 0, pool: 20_000, seed: MIX_SEED + 1 },
  batch100: { batch: 100, pool: 200, seed: MIX_SEED + 2 },
  batch1000: { batch: 1000, pool: 50, seed: MIX_SEED + 3 },
} as const;

function stream(name: keyof typeof STREAMS, connections: number, verify: StreamSpec['verify'], unique = true): StreamSpec {
  const { batch, pool, seed } = STREAMS[name];
  return { name, path: batch === 0 ? '/s3' : '/s3/batch', connections, batch, pool, seed, verify, unique };
}

export type PhaseTarget = 'hello' | 'validate-only' | 'raw' | 'store' | 'bucketmeter' | 'usage-query' | 'inventory-query';

export interface Phase {
  id: string;
  title: string;
  target: PhaseTarget;
  backend?: 'sqlite' | 'postgres';
  /** Names `--only` accepts for this phase besides its id. */
  groups: string[];
  streams: StreamSpec[];
  /** The long run: no warmup, RSS compared between its first and last window. */
  sustained?: boolean;
  /** One of the loads the peak RSS target is stated for. */
  rssTarget?: boolean;
  /** Environment of the server (the bench-only switch that turns usage rollups off). */
  env?: Record<string, string>;
  /** 'store' phases: commit without usage rollups and receipts. */
  noUsage?: boolean;
}

const NO_USAGE = { BUCKETMETER_BENCH_NO_USAGE: '1' };
const NO_INVENTORY = { BUCKETMETER_BENCH_NO_INVENTORY: '1' };

const single = () => stream('single', SINGLE_CONNECTIONS, 'ingest');
const batch100 = () => stream('batch100', BATCH_CONNECTIONS, 'ingest');
const batch1000 = () => stream('batch1000', BATCH_CONNECTIONS, 'ingest');

export function phases(withPostgres: boolean): Phase[] {
  const list: Phase[] = [
    { id: 'hello', title: 'node:http hello-world (POST /s3 bodies)', target: 'hello', groups: ['baselines'], streams: [stream('single', SINGLE_CONNECTIONS, 'status', false)] },
    { id: 'validate', title: 'Fastify parse + validate only, single', target: 'validate-only', groups: ['baselines'], streams: [stream('single', SINGLE_CONNECTIONS, 'ingest', false)] },
    { id: 'validate-batch1000', title: 'Fastify parse + validate only, batch 1,000', target: 'validate-only', groups: ['baselines'], streams: [batch1000()] },
    { id: 'raw-sqlite', title: 'SQLite raw INSERT, 1,000-row tx, synchronous=FULL', target: 'raw', backend: 'sqlite', groups: ['baselines', 'sqlite'], streams: [] },
    // Not a baseline: the product's store without HTTP, to split the gap between raw and HTTP ingest.
    { id: 'store-sqlite', title: 'bucketmeter SQLite store.commit(), 1,000-event units, no HTTP', target: 'store', backend: 'sqlite', groups: ['sqlite', 'batch'], streams: [] },
    { id: 'store-sqlite-nousage', title: 'bucketmeter SQLite store.commit(), 1,000-event units, no HTTP, usage rollups off', target: 'store', backend: 'sqlite', groups: ['sqlite', 'usage'], streams: [], noUsage: true },
    { id: 'single-nousage', title: 'bucketmeter SQLite, POST /s3, usage rollups off', target: 'bucketmeter', backend: 'sqlite', groups: ['sqlite', 'usage'], streams: [single()], env: NO_USAGE },
    { id: 'batch1000-nousage', title: 'bucketmeter SQLite, POST /s3/batch x1,000, usage rollups off', target: 'bucketmeter', backend: 'sqlite', groups: ['sqlite', 'usage'], streams: [batch1000()], env: NO_USAGE },
    // Issue 13's ratio is of the usage rollups alone: the inventory (issue 14) came after it.
    { id: 'single-noinventory', title: 'bucketmeter SQLite, POST /s3, usage rollups on, inventory off', target: 'bucketmeter', backend: 'sqlite', groups: ['sqlite', 'usage'], streams: [single()], env: NO_INVENTORY },
    { id: 'batch1000-noinventory', title: 'bucketmeter SQLite, POST /s3/batch x1,000, usage rollups on, inventory off', target: 'bucketmeter', backend: 'sqlite', groups: ['sqlite', 'usage'], streams: [batch1000()], env: NO_INVENTORY },
    { id: 'usage-query', title: 'bucketmeter SQLite, GET /v1/usage, 30 days of the reference mix', target: 'usage-query', backend: 'sqlite', groups: ['sqlite', 'usage'], streams: [] },
    { id: 'inventory-query', title: 'bucketmeter SQLite, stored bytes and /v1/objects over live versions of 30 days', target: 'inventory-query', backend: 'sqlite', groups: ['sqlite', 'inventory'], streams: [] },
    { id: 'single', title: 'bucketmeter SQLite, POST /s3', target: 'bucketmeter', backend: 'sqlite', groups: ['sqlite'], streams: [single()], rssTarget: true },
    { id: 'batch100', title: 'bucketmeter SQLite, POST /s3/batch x100', target: 'bucketmeter', backend: 'sqlite', groups: ['batch', 'sqlite'], streams: [batch100()], rssTarget: true },
    { id: 'batch1000', title: 'bucketmeter SQLite, POST /s3/batch x1,000', target: 'bucketmeter', backend: 'sqlite', groups: ['batch', 'sqlite'], streams: [batch1000()], rssTarget: true },
    { id: 'sustained', title: 'bucketmeter SQLite, sustained POST /s3/batch x1,000', target: 'bucketmeter', backend: 'sqlite', groups: ['sqlite'], streams: [batch1000()], sustained: true, rssTarget: true },
    // Not one of the target loads: both kinds of client at once, to see how single events fare behind batches.
    { id: 'mixed', title: 'bucketmeter SQLite, single x64 and batch 1,000 x8 at once', target: 'bucketmeter', backend: 'sqlite', groups: ['sqlite'], streams: [single(), batch1000()] },
  ];
  if (withPostgres) {
    list.push(
      { id: 'raw-postgres', title: 'PostgreSQL raw COPY, 1,000-row tx, 1 connection', target: 'raw', backend: 'postgres', groups: ['baselines', 'postgres'], streams: [] },
      { id: 'store-postgres', title: 'bucketmeter PostgreSQL store.commit(), 1,000-event units, no HTTP', target: 'store', backend: 'postgres', groups: ['postgres', 'batch'], streams: [] },
      { id: 'store-postgres-nousage', title: 'bucketmeter PostgreSQL store.commit(), 1,000-event units, no HTTP, usage rollups off', target: 'store', backend: 'postgres', groups: ['postgres', 'usage'], streams: [], noUsage: true },
      { id: 'pg-single-nousage', title: 'bucketmeter PostgreSQL, POST /s3, usage rollups off', target: 'bucketmeter', backend: 'postgres', groups: ['postgres', 'usage'], streams: [single()], env: NO_USAGE },
      { id: 'pg-batch1000-nousage', title: 'bucketmeter PostgreSQL, POST /s3/batch x1,000, usage rollups off', target: 'bucketmeter', backend: 'postgres', groups: ['postgres', 'usage'], streams: [batch1000()], env: NO_USAGE },
      { id: 'pg-single-noinventory', title: 'bucketmeter PostgreSQL, POST /s3, usage rollups on, inventory off', target: 'bucketmeter', backend: 'postgres', groups: ['postgres', 'usage'], streams: [single()], env: NO_INVENTORY },
      { id: 'pg-batch1000-noinventory', title: 'bucketmeter PostgreSQL, POST /s3/batch x1,000, usage rollups on, inventory off', target: 'bucketmeter', backend: 'postgres', groups: ['postgres', 'usage'], streams: [batch1000()], env: NO_INVENTORY },
      { id: 'pg-usage-query', title: 'bucketmeter PostgreSQL, GET /v1/usage, 30 days of the reference mix', target: 'usage-query', backend: 'postgres', groups: ['postgres', 'usage'], streams: [] },
      { id: 'pg-inventory-query', title: 'bucketmeter PostgreSQL, stored bytes and /v1/objects over live versions of 30 days', target: 'inventory-query', backend: 'postgres', groups: ['postgres', 'inventory'], streams: [] },
      { id: 'pg-single', title: 'bucketmeter PostgreSQL, POST /s3', target: 'bucketmeter', backend: 'postgres', groups: ['postgres'], streams: [single()], rssTarget: true },
      { id: 'pg-batch100', title: 'bucketmeter PostgreSQL, POST /s3/batch x100', target: 'bucketmeter', backend: 'postgres', groups: ['batch', 'postgres'], streams: [batch100()], rssTarget: true },
      { id: 'pg-batch1000', title: 'bucketmeter PostgreSQL, POST /s3/batch x1,000', target: 'bucketmeter', backend: 'postgres', groups: ['batch', 'postgres'], streams: [batch1000()], rssTarget: true },
      { id: 'pg-sustained', title: 'bucketmeter PostgreSQL, sustained POST /s3/batch x1,000', target: 'bucketmeter', backend: 'postgres', groups: ['postgres'], streams: [batch1000()], sustained: true, rssTarget: true },
    );
  }
  return list;
}

/** CPU used by other processes during a measured window above which a run is flagged as noisy, in cores. */
export const NOISY_CORES = 0.05;

/** The targets of the issue, as numbers. */
export const TARGETS = {
  singleVsValidate: 1.0,
  singleVsHello: 0.5,
  singleP99Ms: 25,
  batchSqliteVsRaw: 0.8,
  batchSqliteEventsPerSec: 100_000,
  batchPostgresVsCopy: 0.7,
  peakRssMb: 250,
  /** Growth of mean RSS from the first to the last window of the sustained run still called flat. */
  rssFlatGrowth: 0.1,
  diskBytesPerEvent: 120,
  /** Ingest with usage rollups against the same load without them. */
  usageIngestRatio: 0.85,
} as const;
