/**
 * Which way of writing a commit unit into PostgreSQL is fastest, with exactly-once dedup included?
 * The store (src/store/postgres/encode.ts) uses the first two, by unit size; the others lost:
 *
 *   store   BEGIN; event_ids ON CONFLICT DO NOTHING and sequence blocks in one statement; COPY the
 *           new events straight into events; COMMIT (the store's path for large units)
 *   unnest  the store's one statement (statementSql: event_ids, sequence ids, events insert), one
 *           array parameter per column (the store's path for small units)
 *   values  the same statement over a multi-row VALUES list, one parameter per field; prepared once
 *           per row count, and (second line) parsed and planned afresh, which is what units of
 *           varying size get
 *   copy    BEGIN; COPY into a per-connection temp staging table; the statement reads it; COMMIT
 *   raw     COPY straight into events: no dedup, no sequence (the ceiling, not a candidate)
 *
 * Events are the reference mix (bench/mix.ts) normalized by the real validator, measured twice: as
 * the mix has it (2% carry a client eventId) and with an eventId on every event (dedup at its
 * dearest); on loopback, and again through a proxy that adds a network round trip (--rtt-ms, 0 to
 * skip). Within a run the methods take turns unit by unit, so table growth and load from elsewhere
 * on the machine hit all alike; the figure reported is the median of the runs. Then 200k reference-mix events are written
 * through the real store into a fresh database to measure bytes per event.
 *
 *   node dist/bench/pg-insert-methods.js [--url postgres://postgres@127.0.0.1:5432/postgres]
 *     [--units 100] [--unit-size 1000] [--runs 3] [--rtt-ms 2] [--size-events 200000]
 *     [--size-id-share 0.02] [--tenants 1]
 */
import { randomUUID } from 'node:crypto';
import { connect, createServer } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { Client, Pool, type PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createEventValidator } from '../src/events/validate.js';
import type { EventRecord } from '../src/events/catalogue.js';
import { DICT_FIELDS, encodeBool, encodeRest } from '../src/store/row.js';
import { openPostgresStore } from '../src/store/postgres/index.js';
import { migrate } from '../src/store/postgres/migrate.js';
import { ensurePartitions } from '../src/store/postgres/partitions.js';
import { INPUT_COLUMNS, SEQ_BLOCK, statementSql, toPgText, UnitEncoder, UNNEST_INPUT, type InputColumn } from '../src/store/postgres/encode.js';
import { Dictionary, reserveAndCopy } from '../src/store/postgres/store.js';
import type { EventToStore } from '../src/store/types.js';
import { buildUniverse, eventIdSource, EventMix, Rng } from './mix.js';
import { median } from './stats.js';
import { KINDS } from '../src/events/catalogue.js';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
    units: { type: 'string', default: '100' },
    'unit-size': { type: 'string', default: '1000' },
    runs: { type: 'string', default: '3' },
    'size-events': { type: 'string', default: '200000' },
    tenants: { type: 'string', default: '1' },
    'rtt-ms': { type: 'string', default: '2' },
    'size-id-share': { type: 'string', default: '0.02' },
  },
});
const UNITS = Number(args.units);
const UNIT_SIZE = Number(args['unit-size']);
const RUNS = Number(args.runs);
const SIZE_EVENTS = Number(args['size-events']);
const TENANTS = Number(args.tenants);
const RTT_MS = Number(args['rtt-ms']);
const SIZE_ID_SHARE = Number(args['size-id-share']);

// ---- Realistic events: the reference mix (bench/mix.ts), normalized by the real validator ----

/**
 * Events as the store receives them. `idShare` is the share carrying a client eventId: the reference
 * mix has 2%; 1 models clients that all use exactly-once, where dedup costs the most.
 */
function eventSource(seed: number, now: number, idShare: number, tenants: number): () => EventToStore {
  const mix = new EventMix(buildUniverse(), now, seed);
  const rng = new Rng(seed);
  const validator = createEventValidator({ maxFutureSeconds: 900, maxExtraBytes: 4096 });
  const nextId = eventIdSource(`pg${seed}`);
  return () => {
    const wire = mix.nextEvent();
    delete wire.eventId;
    if (rng.chance(idShare)) wire.eventId = nextId();
    const result = validator.validate(wire, now);
    if (!result.ok) throw new Error(`the mix made an invalid event: ${JSON.stringify(result.errors)}`);
    return { tenantId: 1 + rng.int(0, tenants - 1), receivedAt: now, event: result.event };
  };
}

// ---- The methods ----

type InputValue = string | number | boolean | null;
/** One JS array per input column, all of the same length: the rows for the VALUES and COPY methods. */
type EventColumns = Record<InputColumn, InputValue[]>;

/** A unit as the store holds it (with its dictionary ids), and encoded: `literals` for unnest, `columns` for the others. */
interface Encoded {
  events: EventToStore[];
  dict: Map<string, number>;
  literals: string[];
  columns: EventColumns;
}

type Method = (client: PoolClient, unit: Encoded, rows: number) => Promise<number>;

const NO_QUARANTINE: unknown[] = [[], [], [], [], [], [], [], [], [], null];
const columnArrays = (columns: EventColumns) => INPUT_COLUMNS.map(([name]) => columns[name]);

const UNNEST_SQL = statementSql(UNNEST_INPUT);
const unnest: Method = async (client, { literals }) => {
  const result = await client.query({ name: 'bench_unnest', text: UNNEST_SQL, values: [...NO_QUARANTINE, ...literals] });
  return result.rowCount ?? 0;
};

/** One statement text per row count, built once (a statement is prepared per text). */
const valuesSql = new Map<number, string>();
const valuesWith = (prepared: boolean): Method => async (client, { columns }, rows) => {
  let text = valuesSql.get(rows);
  if (text === undefined) {
    const width = INPUT_COLUMNS.length;
    const tuples = Array.from(
      { length: rows },
      (_, r) => `(${INPUT_COLUMNS.map(([, type], c) => `$${10 + r * width + c + 1}::${type}`).join(', ')})`,
    );
    text = statementSql(`(VALUES ${tuples.join(', ')}) AS i(${INPUT_COLUMNS.map(([name]) => name).join(', ')})`);
    valuesSql.set(rows, text);
  }
  const params: unknown[] = [...NO_QUARANTINE];
  for (let r = 0; r < rows; r++) for (const [name] of INPUT_COLUMNS) params.push(columns[name][r]);
  const result = await client.query(prepared ? { name: `bench_values_${rows}`, text, values: params } : { text, values: params });
  return result.rowCount ?? 0;
};

function copyText(columns: (InputValue[] | undefined)[], rows: number): string {
  const escape = (value: InputValue | undefined): string => {
    if (value === null || value === undefined) return '\\N';
    if (typeof value === 'boolean') return value ? 't' : 'f';
    if (typeof value === 'number') return String(value);
    return value.replace(/[\\\n\r\t]/g, (c) => (c === '\\' ? '\\\\' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : '\\t'));
  };
  const lines: string[] = [];
  for (let r = 0; r < rows; r++) lines.push(columns.map((column) => escape(column?.[r])).join('\t'));
  return lines.join('\n') + '\n';
}

const staged = new WeakSet<PoolClient>();
const copy: Method = async (client, { columns }, rows) => {
  if (!staged.has(client)) {
    await client.query(
      `CREATE TEMP TABLE bench_staging (${INPUT_COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ')}) ON COMMIT DELETE ROWS`,
    );
    staged.add(client);
  }
  await client.query('BEGIN');
  try {
    await pipeline(Readable.from([copyText(columnArrays(columns), rows)]), client.query(copyFrom('COPY bench_staging FROM STDIN')));
    const result = await client.query({ name: 'bench_copy', text: statementSql('bench_staging i'), values: NO_QUARANTINE });
    await client.query('COMMIT');
    return result.rowCount ?? 0;
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
};

/** What the store does (src/store/postgres): event_ids and sequence blocks in one statement, then COPY, in one transaction. */
const store: Method = async (client, { events, dict }) => {
  const encoder = new UnitEncoder(events);
  events.forEach((_, ord) => encoder.add(ord));
  const candidates = encoder.eventIds();
  const params = [...NO_QUARANTINE, candidates.tenants, candidates.ids, candidates.rows, Math.ceil(encoder.rows / SEQ_BLOCK)];
  await client.query('BEGIN');
  try {
    const seqs: (number | undefined)[] = [];
    await reserveAndCopy(client, params, encoder, encoder.values.map((value) => dict.get(value)!), seqs);
    await client.query('COMMIT');
    return seqs.filter((seq) => seq !== undefined).length;
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
};

let rawSeq = 1_000_000_000_000;
const raw: Method = async (client, { columns }, rows) => {
  const stored = INPUT_COLUMNS.map(([name]) => name).filter((name) => name !== 'row');
  const seq = Array.from({ length: rows }, () => rawSeq++);
  const text = copyText([seq, ...stored.map((name) => columns[name])], rows);
  await pipeline(Readable.from([text]), client.query(copyFrom(`COPY events (seq, ${stored.join(', ')}) FROM STDIN`)));
  return rows;
};

const METHODS: [string, Method][] = [
  ['store: event_ids + COPY', store],
  ['unnest', unnest],
  ['values', valuesWith(true)],
  // What VALUES costs when unit sizes vary, as they do: every new row count is a new statement.
  ['values, parsed and planned each unit', valuesWith(false)],
  ['copy', copy],
  ['raw COPY (no dedup, ceiling)', raw],
];

// ---- Harness ----

async function withDatabase<T>(prefix: string, run: (url: string) => Promise<T>): Promise<T> {
  const name = `${prefix}_${randomUUID().slice(0, 8)}`;
  const admin = new Client({ connectionString: args.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(args.url);
  url.pathname = `/${name}`;
  try {
    return await run(url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

/**
 * Units of UNIT_SIZE events; 2% of the eventIds are client retries of ids already stored (taken
 * from `storedIds`, which the caller extends with `rememberIds` once the units are committed).
 */
function makeUnits(count: number, next: () => EventToStore, storedIds: readonly string[]): EventToStore[][] {
  return Array.from({ length: count }, () => {
    const unit = Array.from({ length: UNIT_SIZE }, next);
    const inUnit = new Set<string>();
    for (const { event } of unit) {
      if (event.eventId === undefined) continue;
      const retry = storedIds[Math.floor(Math.random() * storedIds.length)];
      // The store removes in-unit repeats before its statement; so must the bench.
      if (Math.random() < 0.02 && retry !== undefined && !inUnit.has(retry)) event.eventId = retry;
      inUnit.add(event.eventId);
    }
    return unit;
  });
}

function rememberIds(units: EventToStore[][], storedIds: string[]): void {
  for (const unit of units) {
    for (const { event } of unit) if (event.eventId !== undefined && storedIds.length < 100_000) storedIds.push(event.eventId);
  }
}

/** The unit's rows as JS column arrays, typed as the commit statement's input columns. */
function encodeColumns(events: { ord: number; tenantId: number; receivedAt: number; event: EventRecord }[], dict: Map<string, number>): EventColumns {
  const columns = Object.fromEntries(INPUT_COLUMNS.map(([name]) => [name, [] as InputValue[]])) as EventColumns;
  const text = (value: string | undefined) => (value === undefined ? null : toPgText(value));
  const dictColumns: InputColumn[] = ['provider_id', 'customer_id', 'feature_id', 'client_type_id', 'client_id', 'bucket_id', 'object_category_id'];
  for (const { ord, tenantId, receivedAt, event } of events) {
    columns.row.push(ord);
    columns.tenant_id.push(tenantId);
    columns.event_id.push(text(event.eventId));
    columns.ts.push(event.timestamp);
    columns.received_at.push(receivedAt);
    columns.bytes.push(event.bytes ?? null);
    DICT_FIELDS.forEach((field, f) => {
      const value = event[field];
      columns[dictColumns[f]!].push(value === undefined ? null : dict.get(value)!);
    });
    columns.action.push(KINDS[event.action].code);
    columns.part_number.push(event.partNumber ?? null);
    const billable = encodeBool(event.isBillableEgress);
    columns.is_billable_egress.push(billable === null ? null : billable === 1);
    columns.object_key.push(text(event.objectKey));
    columns.version_id.push(text(event.versionId));
    columns.upload_id.push(text(event.uploadId));
    columns.rest.push(encodeRest(event));
  }
  return columns;
}

/** Everything a commit does before its statement: dictionary ids (cached) and encoding. */
async function prepare(dictionary: Dictionary, unit: EventToStore[]): Promise<Encoded> {
  const values = new Set<string>();
  for (const { event } of unit) {
    for (const field of DICT_FIELDS) {
      const value = event[field];
      if (value !== undefined) values.add(value);
    }
  }
  const encoded = [...values].map(toPgText);
  const ids = await dictionary.ids(encoded);
  const dict = new Map([...values].map((value, i) => [value, ids.get(encoded[i]!)!]));
  const events = unit.map((e, ord) => ({ ord, ...e }));
  const encoder = new UnitEncoder(unit);
  unit.forEach((_, ord) => encoder.add(ord));
  return { events: unit, dict, literals: encoder.arrays(encoder.values.map((value) => dict.get(value)!)), columns: encodeColumns(events, dict) };
}

/**
 * A TCP proxy that delays every chunk by half the round trip in each direction: ingest hosts reach
 * the database over a network, where a method's round trips per unit cost more than on loopback.
 * It runs in a worker thread, so that the bench's own work cannot hold its timers back.
 */
function serveDelayProxy({ host, port, rttMs }: { host: string; port: number; rttMs: number }): void {
  const server = createServer((client) => {
    const upstream = connect(port, host);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      // Without it, Nagle's algorithm and delayed ACKs add 40 ms stalls a real network would not have.
      from.setNoDelay(true);
      // Timers of equal duration fire in creation order, so the byte stream keeps its order.
      from.on('data', (chunk) => setTimeout(() => to.write(chunk), rttMs / 2));
      from.on('error', () => to.destroy());
      from.on('close', () => setTimeout(() => to.end(), rttMs / 2));
    }
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    parentPort?.postMessage(typeof address === 'object' && address !== null ? address.port : 0);
  });
}

async function delayProxy(target: URL, rttMs: number): Promise<{ url: string; close(): Promise<unknown> }> {
  const worker = new Worker(new URL(import.meta.url), {
    workerData: { host: target.hostname, port: Number(target.port || 5432), rttMs },
  });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return { url: url.toString(), close: () => worker.terminate() };
}

async function compareMethods(idShare: number, rttMs: number): Promise<void> {
  await withDatabase('bm_bench', async (directUrl) => {
    const proxy = rttMs > 0 ? await delayProxy(new URL(directUrl), rttMs) : undefined;
    const url = proxy?.url ?? directUrl;
    const pool = new Pool({ connectionString: url, max: 2 });
    // DROP DATABASE ... WITH (FORCE) may reach a connection pool.end() is still closing.
    pool.on('error', () => {});
    await migrate(pool);
    const now = Math.floor(Date.now() / 1000);
    await ensurePartitions(pool, now - 3600, 1);
    const dictionary = new Dictionary(pool);
    const client = await pool.connect();
    const next = eventSource(1, now, idShare, TENANTS);
    const storedIds: string[] = [];
    // Warm-up: dictionary cache, prepared statements, catalog caches.
    for (const [, method] of METHODS) {
      const units = makeUnits(2, next, storedIds);
      for (const unit of units) await method(client, await prepare(dictionary, unit), unit.length);
      rememberIds(units, storedIds);
    }
    const rates = new Map<string, number[]>(METHODS.map(([name]) => [name, []]));
    const started = performance.now();
    for (let i = 0; i < 20; i++) await client.query('SELECT 1');
    const network = `${rttMs > 0 ? 'through the delay proxy' : 'loopback'}, SELECT 1 takes ${((performance.now() - started) / 20).toFixed(2)} ms`;
    console.log(`\n${Math.round(idShare * 100)}% of events with a client eventId, ${network}; ${UNITS} units of ${UNIT_SIZE} per run, one connection, one unit at a time`);
    for (let run = 1; run <= RUNS; run++) {
      const lanes = METHODS.map(([name, method]) => ({ name, method, units: makeUnits(UNITS, next, storedIds), seconds: 0, stored: 0 }));
      // Unit by unit, taking turns in rotating order, so that load from elsewhere on the machine
      // falls on every method alike.
      for (let u = 0; u < UNITS; u++) {
        for (let k = 0; k < lanes.length; k++) {
          const lane = lanes[(u + k) % lanes.length];
          const unit = lane?.units[u];
          if (lane === undefined || unit === undefined) continue;
          const started = process.hrtime.bigint();
          lane.stored += await lane.method(client, await prepare(dictionary, unit), unit.length);
          lane.seconds += Number(process.hrtime.bigint() - started) / 1e9;
        }
      }
      for (const lane of lanes) {
        // Raw COPY bypasses event_ids: its ids are not stored as far as dedup is concerned.
        if (lane.method !== raw) rememberIds(lane.units, storedIds);
        const rate = (UNITS * UNIT_SIZE) / lane.seconds;
        rates.get(lane.name)?.push(rate);
        console.log(`  run ${run} ${lane.name.padEnd(38)} ${format(rate)} events/s  (${lane.stored} stored)`);
      }
    }
    client.release();
    await pool.end();
    await proxy?.close();
    console.log(`  median of ${RUNS}:`);
    for (const [name, values] of rates) console.log(`        ${name.padEnd(38)} ${format(median(values))} events/s`);
  });
}

const format = (n: number) => Math.round(n).toLocaleString('en-US').padStart(9);

async function measureSize(): Promise<void> {
  await withDatabase('bm_size', async (url) => {
    const store = await openPostgresStore({ url });
    const now = Math.floor(Date.now() / 1000);
    const next = eventSource(2, now, SIZE_ID_SHARE, TENANTS);
    for (let done = 0; done < SIZE_EVENTS; done += UNIT_SIZE) {
      await store.commit({ events: Array.from({ length: Math.min(UNIT_SIZE, SIZE_EVENTS - done) }, next), quarantine: [] });
    }
    await store.close();
    const admin = new Client({ connectionString: url });
    await admin.connect();
    await admin.query('VACUUM ANALYZE');
    const { rows } = await admin.query<{ name: string; bytes: string }>(`
      SELECT 'rows' AS name, count(*) AS bytes FROM events
      UNION ALL SELECT 'events heap (all partitions)', sum(pg_table_size(relid)) FROM pg_partition_tree('events') WHERE isleaf
      UNION ALL SELECT 'index ' || i, sum(pg_relation_size(relid)) FROM unnest(ARRAY['events_tenant_seq', 'events_tenant_ts']) AS i,
        LATERAL pg_partition_tree(i::regclass) GROUP BY i
      UNION ALL SELECT 'event_ids (dedup, kept for ever)', pg_total_relation_size('event_ids')
      UNION ALL SELECT 'dict', pg_total_relation_size('dict')`);
    await admin.end();
    const count = Number(rows[0]?.bytes);
    let events = 0;
    let all = 0;
    const shape = `${Math.round(SIZE_ID_SHARE * 100)}% with a client eventId, ${TENANTS} tenant(s)`;
    console.log(`\nBytes per event, ${count.toLocaleString('en-US')} reference-mix events (${shape}), after VACUUM ANALYZE:`);
    for (const { name, bytes } of rows.slice(1)) {
      if (name.startsWith('events') || name.startsWith('index')) events += Number(bytes);
      all += Number(bytes);
      console.log(`  ${name.padEnd(40)} ${(Number(bytes) / count).toFixed(1).padStart(7)}`);
    }
    console.log(`  ${'events total (heap + its 3 indexes)'.padEnd(40)} ${(events / count).toFixed(1).padStart(7)}`);
    console.log(`  ${'everything'.padEnd(40)} ${(all / count).toFixed(1).padStart(7)}`);
  });
}

const REFERENCE_ID_SHARE = 0.02;
if (isMainThread) {
  for (const rtt of RTT_MS > 0 ? [0, RTT_MS] : [0]) for (const share of [REFERENCE_ID_SHARE, 1]) await compareMethods(share, rtt);
  if (SIZE_EVENTS > 0) await measureSize();
} else {
  serveDelayProxy(workerData as { host: string; port: number; rttMs: number });
}
