/**
 * Baseline: how fast the database takes the reference rows without HTTP, validation or bucketmeter's
 * write path, in the project's own schema (mode 'raw'); and, for diagnosis, how fast the product's
 * store takes the same events without HTTP (mode 'store'). Run by run.ts as a child pinned to the server's core;
 * reads its RawInsertSpec (JSON) from argv[2] and writes one `BENCH <json>` result line on stdout.
 *
 * The rows are the batch-of-1,000 stream's events (same seed), validated and normalized by the
 * product's validator and encoded before the clock starts; only the inserts are timed.
 * - SQLite: the store is opened once (so the schema and pragmas are the product's), then plain
 *   prepared INSERTs into `events` in 1,000-row transactions, WAL, synchronous=FULL.
 * - PostgreSQL: COPY (text format) into `events` (and `event_ids` for client ids), one 1,000-row
 *   transaction at a time on one connection.
 */
import { statSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import Database from 'better-sqlite3';
import { Client } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { pino } from 'pino';
import { SETTINGS } from '../src/config.js';
import { KINDS } from '../src/events/catalogue.js';
import type { EventRecord, NormalizedEvent } from '../src/events/catalogue.js';
import { createEventValidator } from '../src/events/validate.js';
import { DICT_FIELDS, encodeBool, encodeRest } from '../src/store/row.js';
import { ObjectKeyIds, objectKeyHash, prepareObjectKeys } from '../src/store/sqlite/object-keys.js';
import type { CommitUnit, Store } from '../src/store/types.js';
import { batchBodies, eventIdSource } from './mix.js';
import { pinMainThreadOnly } from './proc.js';

export interface RawInsertSpec {
  backend: 'sqlite' | 'postgres';
  /** 'raw': the database's own insert path; 'store': the product's Store.commit() (no HTTP). */
  mode: 'raw' | 'store';
  /** 'store': with usage rollups and receipts (false: the bench-only switch off). */
  usage: boolean;
  /** SQLite: folder for the database file. */
  dir?: string;
  /** PostgreSQL: URL whose search_path selects an empty schema of its own. */
  url?: string;
  rows: number;
  txRows: number;
  /** The batch stream this reproduces: its seed, batch size and pool of distinct batches. */
  seed: number;
  batch: number;
  pool: number;
  now: number;
  tag: string;
  /** --pin=main-thread: this process starts pinned whole; its other threads are let go before the clock starts. */
  pinMainThread?: { cpu: number; otherCpus: string };
}

export interface RawInsertResult {
  rows: number;
  seconds: number;
  rowsPerSec: number;
  /** Database size after the inserts divided by rows (tables and indexes; dictionary included); 0 when not measured. */
  bytesPerRow: number;
  /** Store phases: CPU of this process (every thread) per event while committing, and the usage fold after it. */
  usage?: UsageDrain;
}

/** After the last commit: how long until the usage rollups had caught up, and what that cost. */
export interface UsageDrain {
  /** Seconds from the last commit's answer until nothing was left to fold. */
  seconds: number;
  /** Process CPU per event stored, in µs: while committing, and during the drain. */
  cpuUsPerEvent: number;
  drainCpuUsPerEvent: number;
}

const TENANT = 1;

/** The reference events, normalized by the product's validator, cycled up to `rows`. */
function normalizedEvents(spec: RawInsertSpec): EventRecord[] {
  const validator = createEventValidator({ maxFutureSeconds: SETTINGS.maxFutureSeconds.default, maxExtraBytes: SETTINGS.maxExtraBytes.default });
  const templates = batchBodies(spec.pool, spec.batch, spec.now, spec.seed);
  const nextId = eventIdSource(spec.tag);
  const events: EventRecord[] = [];
  for (let t = 0; events.length < spec.rows; t = (t + 1) % templates.length) {
    for (const wire of JSON.parse(templates[t]!.build(nextId)) as unknown[]) {
      const result = validator.validate(wire, spec.now);
      if (!result.ok) throw new Error(`reference event rejected by the validator: ${JSON.stringify(result.errors)}`);
      events.push(result.event);
      if (events.length === spec.rows) break;
    }
  }
  return events;
}

function dictValues(events: EventRecord[]): string[] {
  const values = new Set<string>();
  for (const event of events) {
    for (const field of DICT_FIELDS) {
      const value = event[field];
      if (value !== undefined) values.add(value);
    }
  }
  return [...values];
}

async function sqlite(spec: RawInsertSpec, events: EventRecord[]): Promise<RawInsertResult> {
  const { openSqliteStore } = await import('../src/store/sqlite/index.js');
  const path = join(spec.dir!, 'bucketmeter.db');
  const store = await openSqliteStore({ path, logger: pino({ level: 'silent' }) });
  await store.close();

  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  const insertValue = db.prepare('INSERT OR IGNORE INTO dict (value) VALUES (?)');
  db.transaction(() => {
    for (const v of dictValues(events)) insertValue.run(v);
  })();
  const ids = new Map((db.prepare('SELECT id, value FROM dict').all() as { id: number; value: string }[]).map((r) => [r.value, r.id]));
  const dict = (value: string | undefined) => (value === undefined ? null : ids.get(value)!);
  // Object keys live in their own table, ids chosen by the product's own scheme: stored before the
  // clock starts, like the dictionary, so that only the events inserts are timed.
  const keyStatements = prepareObjectKeys(db);
  const keyIds = new ObjectKeyIds(objectKeyHash(db));
  const keyId = new Map<string, number>();
  db.transaction(() => {
    for (const { objectKey } of events) if (objectKey !== undefined && !keyId.has(objectKey)) keyId.set(objectKey, keyIds.id(keyStatements, objectKey, []));
  })();
  const rows = events.map((e, i) => [
    i + 1,
    TENANT,
    e.timestamp,
    spec.now - e.timestamp,
    KINDS[e.action].code,
    dict(e.provider),
    dict(e.customerId),
    dict(e.featureId),
    dict(e.clientType),
    dict(e.clientId),
    dict(e.bucket),
    dict(e.objectCategory),
    e.objectKey === undefined ? null : keyId.get(e.objectKey)!,
    e.versionId ?? null,
    e.uploadId ?? null,
    e.bytes ?? null,
    e.partNumber ?? null,
    encodeBool(e.isBillableEgress),
    e.eventId ?? null,
    encodeRest(e),
  ]);
  const insert = db.prepare(
    `INSERT INTO events (seq, tenant, timestamp, received_after, action, provider, customer, feature, client_type, client_id,
       bucket, object_category, object_key, version_id, upload_id, bytes, part_number, billable, event_id, rest)
     VALUES (${Array(20).fill('?').join(', ')})`,
  );
  const chunk = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) insert.run(rows[i]!);
  });

  const started = process.hrtime.bigint();
  for (let from = 0; from < rows.length; from += spec.txRows) chunk(from, Math.min(rows.length, from + spec.txRows));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;

  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const bytes = readdirSync(spec.dir!).reduce((sum, name) => sum + statSync(join(spec.dir!, name)).size, 0);
  return { rows: rows.length, seconds, rowsPerSec: rows.length / seconds, bytesPerRow: bytes / rows.length };
}

/** One value in COPY text format. */
function copyText(value: string | number | boolean | null): string {
  if (value === null) return '\\N';
  if (typeof value !== 'string') return String(value);
  return value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

const PG_COLUMNS = 'seq, ts, received_at, bytes, tenant_id, provider_id, customer_id, feature_id, client_type_id, client_id, bucket_id, object_category_id, action, part_number, is_billable_egress, event_id, object_key, version_id, upload_id, rest';

async function postgres(spec: RawInsertSpec, events: EventRecord[]): Promise<RawInsertResult> {
  const { openPostgresStore } = await import('../src/store/postgres/index.js');
  const store = await openPostgresStore({ url: spec.url!, poolMax: 2 });
  await store.close();

  const client = new Client({ connectionString: spec.url! });
  await client.connect();
  try {
    await client.query('INSERT INTO dict (value) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING', [dictValues(events)]);
    const { rows: dictRows } = await client.query<{ id: number; value: string }>('SELECT id, value FROM dict');
    const ids = new Map(dictRows.map((r) => [r.value, r.id]));
    const dict = (value: string | undefined) => (value === undefined ? null : ids.get(value)!);
    const chunks: { events: Buffer; eventIds: Buffer | undefined }[] = [];
    for (let from = 0; from < events.length; from += spec.txRows) {
      const lines: string[] = [];
      const idLines: string[] = [];
      for (let i = from; i < Math.min(events.length, from + spec.txRows); i++) {
        const e = events[i]!;
        const billable = encodeBool(e.isBillableEgress);
        const row = [
          i + 1, e.timestamp, spec.now, e.bytes ?? null, TENANT, dict(e.provider), dict(e.customerId), dict(e.featureId),
          dict(e.clientType), dict(e.clientId), dict(e.bucket), dict(e.objectCategory), KINDS[e.action].code,
          e.partNumber ?? null, billable === null ? null : billable === 1, e.eventId ?? null, e.objectKey ?? null,
          e.versionId ?? null, e.uploadId ?? null, encodeRest(e),
        ];
        lines.push(row.map(copyText).join('\t'));
        if (e.eventId !== undefined) idLines.push(`${TENANT}\t${copyText(e.eventId)}`);
      }
      chunks.push({
        events: Buffer.from(lines.join('\n') + '\n'),
        eventIds: idLines.length > 0 ? Buffer.from(idLines.join('\n') + '\n') : undefined,
      });
    }

    const started = process.hrtime.bigint();
    for (const chunk of chunks) {
      await client.query('BEGIN');
      await pipeline(Readable.from([chunk.events]), client.query(copyFrom(`COPY events (${PG_COLUMNS}) FROM STDIN`)));
      if (chunk.eventIds) await pipeline(Readable.from([chunk.eventIds]), client.query(copyFrom('COPY event_ids (tenant_id, event_id) FROM STDIN')));
      await client.query('COMMIT');
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;

    const { rows } = await client.query<{ bytes: string }>(
      `SELECT sum(pg_total_relation_size(c.oid))::bigint AS bytes FROM pg_class c
       WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'm')`,
    );
    return { rows: events.length, seconds, rowsPerSec: events.length / seconds, bytesPerRow: Number(rows[0]?.bytes ?? 0) / events.length };
  } finally {
    await client.end();
  }
}

/** Units of `txRows` events kept in flight at once, as the committer does behind concurrent requests. */
const STORE_IN_FLIGHT = 4;

/**
 * The product's store without HTTP: Store.commit() of `txRows`-event units, a few in flight. Between
 * this and the raw figure is the store's own cost; between this and the HTTP phases, the rest.
 */
async function store(spec: RawInsertSpec, events: EventRecord[]): Promise<RawInsertResult> {
  let opened: Store;
  if (spec.backend === 'sqlite') {
    const { openSqliteStore } = await import('../src/store/sqlite/index.js');
    opened = await openSqliteStore({ path: join(spec.dir!, 'bucketmeter.db'), logger: pino({ level: 'silent' }), usage: spec.usage });
  } else {
    const { openPostgresStore } = await import('../src/store/postgres/index.js');
    opened = await openPostgresStore({ url: spec.url!, poolMax: SETTINGS.pgPoolMax.default, usage: spec.usage });
  }
  // After the store is open: its SQLite writer thread exists by now.
  if (spec.pinMainThread) pinMainThreadOnly(process.pid, spec.pinMainThread.cpu, spec.pinMainThread.otherCpus);
  const units: CommitUnit[] = [];
  for (let from = 0; from < events.length; from += spec.txRows) {
    units.push({ events: events.slice(from, from + spec.txRows).map((event) => ({ tenantId: TENANT, receivedAt: spec.now, event: event as NormalizedEvent })), quarantine: [] });
  }
  let next = 0;
  const lane = async () => {
    while (next < units.length) await opened.commit(units[next++]!);
  };
  const cpu = () => {
    const { user, system } = process.cpuUsage();
    return user + system;
  };
  const started = process.hrtime.bigint();
  const cpuStarted = cpu();
  await Promise.all(Array.from({ length: STORE_IN_FLIGHT }, lane));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpuCommitted = cpu();
  // The rollups are folded after commit: here all at once (no node runs its background catch-up).
  await opened.usage.catchUp();
  const drainSeconds = Number(process.hrtime.bigint() - started) / 1e9 - seconds;
  const usage = { seconds: drainSeconds, cpuUsPerEvent: (cpuCommitted - cpuStarted) / events.length, drainCpuUsPerEvent: (cpu() - cpuCommitted) / events.length };
  await opened.close();
  let bytes = 0;
  if (spec.backend === 'sqlite') bytes = readdirSync(spec.dir!).reduce((sum, name) => sum + statSync(join(spec.dir!, name)).size, 0);
  return { rows: events.length, seconds, rowsPerSec: events.length / seconds, bytesPerRow: bytes / events.length, usage };
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as RawInsertSpec;
  const events = normalizedEvents(spec);
  // The raw baselines run on this thread alone; the store pins once its writer thread is up.
  if (spec.pinMainThread && spec.mode === 'raw') pinMainThreadOnly(process.pid, spec.pinMainThread.cpu, spec.pinMainThread.otherCpus);
  const result = spec.mode === 'store' ? await store(spec, events) : spec.backend === 'sqlite' ? await sqlite(spec, events) : await postgres(spec, events);
  process.stdout.write(`BENCH ${JSON.stringify({ event: 'result', result })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`raw insert failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
