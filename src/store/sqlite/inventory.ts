/**
 * SQLite's object inventory. The writer adds one outbox row per tenant to each event transaction (the
 * range of its events' seqs); catchUp, on the derived thread (derived.ts: the inventory is in the
 * derived file, the outbox in the events file), logs the pending events
 * in the per-key inventory log, gathers through it what they can change and from when (timeline.ts
 * Closure), replays that over the entries alive before it and moves the per-hour deltas by what
 * changed, and records the last outbox row it applied in the same transaction; the rows up to it are
 * deleted after it (purge), in a transaction of the events file of their own. Reads (InventoryReader)
 * run on reader threads.
 */
import type { Statement } from 'better-sqlite3';
import { KINDS } from '../../events/catalogue.js';
import type { ActionName } from '../../events/catalogue.js';
import { Closure, FROM_THE_START, deltaKey, nodeBucket, redo, splitKey, touches } from '../../inventory/timeline.js';
import type { Entry, TimelineEvent } from '../../inventory/timeline.js';
import { INVENTORY_ACTION_CODES, KIND_CODE, actionOf, attribution, compareInventory, kindOf, pickEntries, rankSql, restFields } from '../../inventory/rows.js';
import {
  COARSE_SHAPES, DELTA_COLUMNS, DIMENSION_COLUMNS, FINE_SHAPE, addTerms, coarseShapesMigrationSql, compareShapes, dimensionColumns, dimensionIds, planStorage, project, storedValueColumns,
  sumsOf, sumsSql, valueColumns, WIDE_VALUE_COLUMNS, wideValuePositions,
} from '../../inventory/shapes.js';
import type { ShapeRow, StorageShape, TermRow } from '../../inventory/shapes.js';
import { DIMENSION_COLUMN } from '../../usage/shapes.js';
import type { Dimension } from '../../usage/shapes.js';
import { CATCH_UP_SPAN, outboxStepSql } from '../inventory-step.js';
import { SumOutOfRangeError, serverEventId } from '../types.js';
import type {
  InventoryDifference, InventoryEntryRecord, InventoryLag, ObjectsStoreQuery, StorageDeltaRow, StorageInterval, StorageIntervalFilter, StorageKey, StorageStoreQuery,
  StorageWindowSums,
} from '../types.js';
import type { Connection } from './connection.js';
import { addSetSql, fromStored, highColumn, join, toStored } from '../wide.js';
import { integerSums } from './integer-sums.js';

/** Migration 5: the inventory, its hourly deltas and the outbox, which holds every tenant so the first catch-up builds it from the stored events. */
export const INVENTORY_MIGRATION_SQL = `
CREATE TABLE inventory (
  id INTEGER PRIMARY KEY,
  tenant INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  bucket INTEGER NOT NULL,
  object_key TEXT,
  version_id TEXT,
  upload_id TEXT,
  part_number INTEGER,
  size INTEGER,
  started INTEGER NOT NULL,
  created_by TEXT NOT NULL,
  action INTEGER NOT NULL,
  provider INTEGER NOT NULL,
  customer INTEGER NOT NULL,
  feature INTEGER NOT NULL,
  client_type INTEGER NOT NULL,
  client_id INTEGER NOT NULL,
  ended INTEGER,
  ended_by TEXT
) STRICT;
-- Listings and replays by key; replays by upload; the cost feed's intervals by time.
CREATE INDEX inventory_key ON inventory (tenant, bucket, object_key, started);
CREATE INDEX inventory_upload ON inventory (tenant, bucket, upload_id) WHERE upload_id IS NOT NULL;
CREATE INDEX inventory_started ON inventory (tenant, started);

CREATE TABLE inventory_hours (
  tenant INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  ${DIMENSION_COLUMNS.map((d) => `${d} INTEGER NOT NULL`).join(',\n  ')},
  ${DELTA_COLUMNS.map((c) => `${c} INTEGER NOT NULL`).join(',\n  ')},
  PRIMARY KEY (tenant, hour, ${DIMENSION_COLUMNS.join(', ')})
) STRICT, WITHOUT ROWID;

-- One row per tenant per event transaction: its earliest timestamp and its events' seqs.
CREATE TABLE inventory_outbox (
  id INTEGER PRIMARY KEY,
  tenant INTEGER NOT NULL,
  from_ts INTEGER NOT NULL,
  first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  at INTEGER NOT NULL
) STRICT;
INSERT INTO inventory_outbox (tenant, from_ts, first_seq, last_seq, at) SELECT tenant, min(timestamp), min(seq), max(seq), unixepoch() FROM events GROUP BY tenant;
`;

/**
 * The writer's hook: one row per tenant of a transaction's inventory events, their earliest timestamp
 * and first and last seq, as the writer counted them while inserting (InventoryFeed).
 */
export const OUTBOX_ROW = 'INSERT INTO inventory_outbox (tenant, from_ts, first_seq, last_seq, at) VALUES (?, ?, ?, ?, unixepoch())';

/**
 * Migration 7: the per-key inventory log, which a catch-up reads to find the events its new ones are
 * connected to (timeline.ts Closure) instead of every event since their earliest timestamp. One row
 * per node an event touches (touches(): 0 a key, 1 an upload, 2 the bucket's forced deletes; name ''),
 * written by the catch-up that applies the event, so the commit path writes nothing more. The bucket
 * is by name: a copy source's bucket may have no dictionary id yet. An outbox row per tenant over all
 * its events makes the next catch-up log every stored event (and replay the inventory from its start).
 */
export const INVENTORY_LOG_MIGRATION_SQL = `
CREATE TABLE inventory_log (
  tenant INTEGER NOT NULL,
  bucket TEXT NOT NULL,
  node INTEGER NOT NULL,
  name TEXT NOT NULL,
  ts INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (tenant, bucket, node, name, ts, seq)
) STRICT, WITHOUT ROWID;
INSERT INTO inventory_outbox (tenant, from_ts, first_seq, last_seq, at)
SELECT t.tenant, t.f, t.a, t.b, unixepoch() FROM (SELECT tenant AS tenant, min(timestamp) AS f, min(seq) AS a, max(seq) AS b FROM events WHERE action IN (${INVENTORY_ACTION_CODES.join(', ')}) GROUP BY tenant) AS t
-- Not again for a tenant whose pending row (migration 5's, not yet applied) covers them already.
WHERE NOT EXISTS (SELECT 1 FROM inventory_outbox o WHERE o.tenant = t.tenant AND o.first_seq <= t.a AND o.last_seq >= t.b AND o.from_ts <= t.f);
`;

/**
 * Migration 9: the entries of a key by kind and end, so a catch-up finds those alive at its replay's
 * time (ended IS NULL, or ended at or after it) without reading every entry the key ever had (which
 * inventory_key, by start, made it do: a hot key's whole history on each catch-up).
 */
export const INVENTORY_ENDED_MIGRATION_SQL = 'CREATE INDEX inventory_ended ON inventory (tenant, bucket, object_key, ended, kind)';

/** Migration 10: the coarse delta shapes, hourly and per UTC day (inventory/shapes.ts), filled from the full one. */
export const INVENTORY_SHAPES_MIGRATION_SQL = coarseShapesMigrationSql(
  (shape) => `CREATE TABLE ${shape.table} (
  tenant INTEGER NOT NULL,
  ${shape.grain} INTEGER NOT NULL,
  ${[...dimensionColumns(shape), ...valueColumns(shape)].map((c) => `${c} INTEGER NOT NULL`).join(',\n  ')},
  PRIMARY KEY (tenant, ${shape.grain}, ${dimensionColumns(shape).join(', ')})
) STRICT, WITHOUT ROWID;`,
);

const ENTRY_COLUMNS = 'id, kind, bucket, object_key, version_id, upload_id, part_number, size, started, created_by, action, provider, customer, feature, client_type, client_id, ended, ended_by';
type EntryRow = [number, number, number, string | null, string | null, string | null, number | null, number | bigint | null, number, string, number, number, number, number, number, number, number | null, string | null];

function entryOf(r: EntryRow): Entry {
  return {
    id: r[0],
    kind: kindOf(r[1]),
    bucket: String(r[2]),
    objectKey: r[3],
    versionId: r[4],
    uploadId: r[5],
    partNumber: r[6],
    size: r[7] === null ? null : BigInt(r[7]),
    start: r[8],
    createdBy: r[9],
    action: actionOf(r[10]),
    attribution: attribution(r[11], r[12], r[13], r[14], r[15]),
    end: r[16],
    endedBy: r[17],
  };
}

const EVENTS_SQL = `SELECT e.seq, e.tseq, e.timestamp, e.action, e.provider, coalesce(e.customer, 0), coalesce(e.feature, 0), coalesce(e.client_type, 0),
  coalesce(e.client_id, 0), e.bucket, k.value, e.version_id, e.upload_id, e.bytes, e.part_number, e.event_id, e.rest
FROM events e LEFT JOIN object_keys k ON k.id = e.object_key
WHERE e.tenant = ? AND e.action IN (${INVENTORY_ACTION_CODES.join(', ')}) AND e.bucket IS NOT NULL`;

/** The log's node code of a touches() node. */
const NODE_CODE: Record<string, number> = { k: 0, u: 1, b: 2 };

type EventRow = [number, number | null, number, number, number, number, number, number, number, number | null, string | null, string | null, string | null, number | null, number | null, string | null, string | null];

/** Adds a row (tenant, time, dimension ids, stored values: toStored) to a delta shape's table. */
function upsertSql(shape: StorageShape): string {
  const columns = [...dimensionColumns(shape), ...storedValueColumns(shape)];
  return `INSERT INTO ${shape.table} (tenant, ${shape.grain}, ${columns.join(', ')}) VALUES (${['?', '?', ...columns.map(() => '?')].join(', ')})
ON CONFLICT DO UPDATE SET ${addSetSql(valueColumns(shape), WIDE_VALUE_COLUMNS)}`;
}

const FINE_WIDE = wideValuePositions(FINE_SHAPE);

/** The last outbox row the inventory applied (in the derived file: derived.ts): the rows after it are pending. */
export const APPLIED_OUTBOX_ROW = "(SELECT value FROM derived_counters WHERE name = 'inventory_outbox_id')";

/** Outbox rows not applied yet: past the last one the inventory applied. */
const PENDING = `id > ${APPLIED_OUTBOX_ROW}`;

/** The derived thread's side: catch-up, rebuild and verify, each one transaction. */
export class InventoryWriter {
  readonly #s;

  constructor(db: Connection) {
    const select = `SELECT ${ENTRY_COLUMNS} FROM inventory WHERE tenant = ?`;
    // Entries a replay from @from loads (alive just before it) or redoes (started or ended at or after it).
    const relevant = 'AND (started >= @from OR ended IS NULL OR ended >= @from)';
    // The same for a key (an entry never ends before it starts: alive at @from or made since), as two
    // ranges of inventory_ended, not a test of every entry the key ever had (inventory_key has no end).
    const byKey = (cols: string, kinds: string) => `SELECT ${cols} FROM inventory INDEXED BY inventory_ended WHERE tenant = @tenant AND bucket = @bucket AND object_key = @name AND kind IN (${kinds})`;
    const aliveAt = (cols: string, kinds: string) => `${byKey(cols, kinds)} AND ended IS NULL UNION ALL ${byKey(cols, kinds)} AND ended >= @from`;
    this.#s = {
      pending: db.prepare(outboxStepSql('@span', '@upTo', PENDING)).raw(true),
      pendingUpTo: db.prepare(`SELECT EXISTS (SELECT 1 FROM inventory_outbox WHERE id <= ? AND ${PENDING})`).pluck(),
      newest: db.prepare('SELECT coalesce(max(id), 0) FROM inventory_outbox').pluck(),
      any: db.prepare(`SELECT EXISTS (SELECT 1 FROM inventory_outbox WHERE ${PENDING})`).pluck(),
      applied: db.prepare("UPDATE derived_counters SET value = ? WHERE name = 'inventory_outbox_id'"),
      purge: db.prepare(`DELETE FROM inventory_outbox WHERE id <= ${APPLIED_OUTBOX_ROW}`),
      events: db.prepare(`${EVENTS_SQL} AND e.timestamp >= ?`).raw(true),
      eventsIn: db.prepare(`${EVENTS_SQL} AND e.seq >= ? AND e.seq <= ?`).raw(true),
      // A closure step's events in one statement (a JSON array of seqs), not one each.
      eventsAt: db.prepare(`${EVENTS_SQL} AND e.seq IN (SELECT value FROM json_each(?))`).raw(true),
      dictId: db.prepare('SELECT id FROM dict WHERE value = ?').pluck(),
      dictValue: db.prepare('SELECT value FROM dict WHERE id = ?').pluck(),
      log: db.prepare('INSERT OR IGNORE INTO inventory_log (tenant, bucket, node, name, ts, seq) VALUES (?, ?, ?, ?, ?, ?)'),
      logNode: db.prepare('SELECT seq FROM inventory_log WHERE tenant = ? AND bucket = ? AND node = ? AND name = ? AND ts >= ?').pluck(),
      logBucket: db.prepare('SELECT seq FROM inventory_log WHERE tenant = ? AND bucket = ? AND ts >= ?').pluck(),
      clearLog: db.prepare('DELETE FROM inventory_log WHERE tenant = ?'),
      atKey: db.prepare(aliveAt(ENTRY_COLUMNS, '0, 1')).raw(true),
      atUpload: db.prepare(`${select.replace('?', '@tenant')} AND bucket = @bucket AND upload_id = @name AND kind IN (2, 3) ${relevant}`).raw(true),
      atBucket: db.prepare(`${select.replace('?', '@tenant')} AND bucket = @bucket ${relevant}`).raw(true),
      uploadsAt: db.prepare(`SELECT upload_id FROM (${aliveAt('upload_id, started', '3')}) WHERE started < @from`).pluck(),
      uploadKeys: db.prepare('SELECT object_key FROM inventory WHERE tenant = ? AND bucket = ? AND upload_id = ? AND kind = 3 AND started <= ?').pluck(),
      remove: db.prepare('DELETE FROM inventory WHERE id = ?'),
      end: db.prepare('UPDATE inventory SET ended = ?, ended_by = ? WHERE id = ?'),
      insert: db.prepare(`INSERT INTO inventory (tenant, ${ENTRY_COLUMNS.slice(4)}) VALUES (${ENTRY_COLUMNS.split(',').map(() => '?').join(', ')})`),
      fine: db.prepare(upsertSql(FINE_SHAPE)),
      clear: db.prepare('DELETE FROM inventory WHERE tenant = ?'),
      clearHours: db.prepare('DELETE FROM inventory_hours WHERE tenant = ?'),
      coarse: COARSE_SHAPES.map((shape) => ({
        shape,
        upsert: db.prepare(upsertSql(shape)),
        clear: db.prepare(`DELETE FROM ${shape.table} WHERE tenant = ?`),
        wide: wideValuePositions(shape),
        rows: db.prepare(`SELECT ${shape.grain}, ${[...dimensionColumns(shape), ...storedValueColumns(shape)].join(', ')} FROM ${shape.table} WHERE tenant = ?`).raw(true).safeIntegers(true),
      })),
      tenants: db.prepare('SELECT DISTINCT tenant FROM events').pluck(),
      all: db.prepare(select).raw(true),
      hours: db.prepare(`SELECT hour, bucket, action, provider, customer, feature, client_type, client_id, ${storedValueColumns(FINE_SHAPE).join(', ')} FROM inventory_hours WHERE tenant = ?`).raw(true),
    };
  }

  /** Whether the outbox has anything to apply. */
  pending(): boolean {
    return this.#s.any.get() === 1;
  }

  /** The newest outbox row's id (0: none): where a catch-up that begins now ends. */
  newest(): number {
    return this.#s.newest.get() as number;
  }

  /**
   * Applies the oldest pending outbox rows up to id `upTo`, about `maxSpan` seqs (inventory-step.ts);
   * whether any up to it are left. The caller runs it in a transaction.
   */
  catchUp(upTo: number, maxSpan = CATCH_UP_SPAN): boolean {
    const byTenant = new Map<number, [number, number][]>();
    // The step's rows are the first pending ones, in id order: all those up to the last.
    let last = 0;
    for (const [tenant, first, lastSeq, id] of this.#s.pending.all({ span: maxSpan, upTo }) as number[][]) {
      const seqs = byTenant.get(tenant!) ?? [];
      seqs.push([first!, lastSeq!]);
      byTenant.set(tenant!, seqs);
      last = id!;
    }
    for (const [tenant, seqs] of byTenant) {
      const names = this.#names();
      const fresh = new Map<number, TimelineEvent>();
      for (const [first, lastSeq] of seqs) for (const [seq, e] of this.#read(this.#s.eventsIn, tenant, first, lastSeq)) fresh.set(seq, e);
      this.#log(tenant, fresh, names);
      const c = new Closure();
      for (const [seq, e] of fresh) c.add(seq, e, true);
      this.#close(tenant, c, names);
      this.#recompute(tenant, c);
    }
    if (last !== 0) this.#s.applied.run(last);
    return this.#s.pendingUpTo.get(upTo) === 1;
  }

  /**
   * Deletes the outbox rows applied (a write to the events file): after the transaction that applied
   * them, in one of its own, so the catch-up never holds the events file's lock while it works.
   */
  purge(): void {
    this.#s.purge.run();
  }

  /**
   * Everything of the tenants again from their events. The caller runs it in a transaction, after
   * applying every outbox row of its snapshot (catchUp to newest): the events the rebuild reads are
   * then exactly those of the rows applied, none twice, none left out.
   */
  rebuild(tenantId: number | null): void {
    const tenants = tenantId === null ? (this.#s.tenants.all() as number[]) : [tenantId];
    for (const tenant of tenants) {
      this.#s.clear.run(tenant);
      this.#s.clearHours.run(tenant);
      for (const c of this.#s.coarse) c.clear.run(tenant);
      this.#s.clearLog.run(tenant);
      const all = this.#read(this.#s.events, tenant, Number.MIN_SAFE_INTEGER);
      this.#log(tenant, all, this.#names());
      this.#write(tenant, redo([], [...all.values()], FROM_THE_START));
    }
  }

  verify(tenantId: number | null): InventoryDifference[] {
    const tenants = tenantId === null ? (this.#s.tenants.all() as number[]) : [tenantId];
    const out: InventoryDifference[] = [];
    for (const tenant of tenants) {
      const stored = (this.#s.all.all(tenant) as EntryRow[]).map(entryOf);
      const hours = new Map<string, bigint[]>();
      const fine: ShapeRow[] = [];
      for (const r of this.#s.hours.safeIntegers(true).all(tenant) as bigint[][]) {
        const a = attribution(Number(r[3]), Number(r[4]), Number(r[5]), Number(r[6]), Number(r[7]));
        const values = fromStored(r, 8, DELTA_COLUMNS.length, FINE_WIDE);
        hours.set(deltaKey(Number(r[0]) * 3600, String(r[1]), actionOf(Number(r[2])), a), values);
        fine.push({ time: Number(r[0]), ids: [r[3], r[1], r[4], r[5], r[6], r[7], r[2]].map(Number), values });
      }
      out.push(...compareInventory(tenant, [...this.#read(this.#s.events, tenant, Number.MIN_SAFE_INTEGER).values()], stored, hours));
      const coarse = new Map<StorageShape, ShapeRow[]>();
      for (const c of this.#s.coarse) {
        const n = c.shape.dimensions.length;
        const count = valueColumns(c.shape).length;
        coarse.set(c.shape, (c.rows.all(tenant) as bigint[][]).map((r) => ({ time: Number(r[0]), ids: r.slice(1, 1 + n).map(Number), values: fromStored(r, 1 + n, count, c.wide) })));
      }
      out.push(...compareShapes(tenant, fine, coarse));
    }
    return out;
  }

  /** The tenant's inventory events a statement selects (`args` after the tenant), by seq. */
  #read(statement: Statement, tenant: number, ...args: (number | string)[]): Map<number, TimelineEvent> {
    const buckets = new Map<string, string>();
    const bucketId = (name: string) => {
      let id = buckets.get(name);
      if (id === undefined) {
        const found = this.#s.dictId.get(name) as number | undefined;
        // A bucket never stored matches no entry.
        id = found === undefined ? `?${name}` : String(found);
        buckets.set(name, id);
      }
      return id;
    };
    const out = new Map<number, TimelineEvent>();
    for (const r of statement.all(tenant, ...args) as EventRow[]) {
      const e: TimelineEvent = {
        ts: r[2],
        action: actionOf(r[3]),
        eventId: r[15] ?? serverEventId(r[1] ?? r[0]),
        bucket: String(r[9]),
        attribution: attribution(r[4], r[5], r[6], r[7], r[8]),
        ...restFields(r[16]),
      };
      if (r[10] !== null) e.objectKey = r[10];
      if (r[11] !== null) e.versionId = r[11];
      if (r[12] !== null) e.uploadId = r[12];
      if (r[13] !== null) e.bytes = r[13];
      if (r[14] !== null) e.partNumber = r[14];
      if (e.copySource !== undefined) e.copySource = { ...e.copySource, bucket: bucketId(e.copySource.bucket) };
      out.set(r[0], e);
    }
    return out;
  }

  /** A node's bucket by name, as the log keeps it (an event's bucket is a dictionary id, an unknown copy source's `?name`). */
  #names(): (bucket: string) => string {
    return memoized((bucket) => (bucket.startsWith('?') ? bucket.slice(1) : (this.#s.dictValue.get(Number(bucket)) as string)));
  }

  #log(tenant: number, events: Map<number, TimelineEvent>, name: (bucket: string) => string): void {
    for (const [seq, e] of events) {
      for (const n of touches(e)) this.#s.log.run(tenant, name(nodeBucket(n)), NODE_CODE[n[0]!], n[0] === 'b' ? '' : splitKey(n.slice(1))[1], e.ts, seq);
    }
  }

  /** Reads what the closure asks until it is closed. */
  #close(tenant: number, c: Closure, name: (bucket: string) => string): void {
    const s = this.#s;
    for (let step = c.next(); step !== null; step = c.next()) {
      const seqs = new Set<number>();
      for (const [n, from] of step.nodes) {
        for (const seq of s.logNode.all(tenant, name(nodeBucket(n)), NODE_CODE[n[0]!], n[0] === 'b' ? '' : splitKey(n.slice(1))[1], from) as number[]) seqs.add(seq);
        const [bucket, objectKey] = splitKey(n.slice(1));
        if (n[0] !== 'k' || bucket.startsWith('?')) continue;
        for (const upload of s.uploadsAt.all({ tenant, bucket: Number(bucket), name: objectKey, from }) as string[]) c.uploadAt(`${bucket}\u0000${upload}`, from);
      }
      for (const [bucket, from] of step.buckets) for (const seq of s.logBucket.all(tenant, name(bucket), from) as number[]) seqs.add(seq);
      for (const [upload, at] of step.uploads) {
        const [bucket, uploadId] = splitKey(upload);
        for (const key of s.uploadKeys.all(tenant, Number(bucket), uploadId, at) as string[]) c.uploadKey(upload, key, at);
      }
      const unread = [...seqs].filter((seq) => !c.events.has(seq));
      if (unread.length > 0) for (const [seq, e] of this.#read(s.eventsAt, tenant, JSON.stringify(unread))) c.add(seq, e, false);
    }
  }

  /**
   * Replays what the closure gathered: the entries of each node reached (and of each bucket a forced
   * delete reached) made at or after its time go, those ended at or after it reopen, and the replay
   * redoes both; the deltas move by the difference.
   */
  #recompute(tenant: number, c: Closure): void {
    const s = this.#s;
    const rows = new Map<number, EntryRow>();
    const add = (list: EntryRow[]) => {
      for (const row of list) rows.set(row[0], row);
    };
    for (const [n, from] of c.from) {
      if (n[0] === 'b') continue;
      const [bucket, name] = splitKey(n.slice(1));
      if (bucket.startsWith('?')) continue;
      add((n[0] === 'k' ? s.atKey : s.atUpload).all({ tenant, bucket: Number(bucket), name, from }) as EntryRow[]);
    }
    for (const [bucket, from] of c.buckets) add(s.atBucket.all({ tenant, bucket: Number(bucket), from }) as EntryRow[]);
    this.#write(tenant, redo([...rows.values()].map(entryOf), [...c.events.values()], c));
  }

  #write(tenant: number, change: ReturnType<typeof redo>): void {
    const s = this.#s;
    const { removed, ended, made, deltas } = change;
    for (const id of removed) s.remove.run(id);
    for (const entry of ended) s.end.run(entry.end, entry.endedBy, entry.id);
    for (const e of made) {
      const a = e.attribution;
      s.insert.run(tenant, KIND_CODE[e.kind], Number(e.bucket), e.objectKey, e.versionId, e.uploadId, e.partNumber, e.size, e.start, e.createdBy, KINDS[e.action].code,
        a.provider, a.customer, a.feature, a.clientType, a.clientId, e.end, e.endedBy);
    }
    const written: ShapeRow[] = [];
    for (const row of deltas.rows.values()) {
      if (row.values.every((v) => v === 0n)) continue;
      const shaped: ShapeRow = { time: row.hour / 3600, ids: dimensionIds(row), values: row.values };
      s.fine.run(tenant, shaped.time, ...shaped.ids, ...toStored(shaped.values, FINE_WIDE));
      written.push(shaped);
    }
    // The coarse shapes' sums of the rows written: one upsert per coarse key.
    for (const c of s.coarse) for (const r of project(c.shape, written).values()) c.upsert.run(tenant, r.time, ...r.ids, ...toStored(r.values, c.wide));
  }
}

const STATEMENT_CACHE = 100;

/** `make` of each text once: later calls with it get the same value. */
function memoized<V>(make: (text: string) => V): (text: string) => V {
  const made = new Map<string, V>();
  return (text) => {
    let value = made.get(text);
    if (value === undefined) {
      value = make(text);
      made.set(text, value);
    }
    return value;
  };
}

/** The reads: storage sums, object listings, lag, and the cost feed; on a reader thread. */
export class InventoryReader {
  readonly #statements = new Map<string, Statement>();
  readonly #dict = new Map<number, string>();

  constructor(private readonly db: Connection) {}

  lag(): InventoryLag {
    const [pending, oldest] = this.#prepare(`SELECT count(*), coalesce(unixepoch() - min(at), 0) FROM inventory_outbox WHERE ${PENDING}`).raw(true).get() as [number, number];
    return { pending, oldestSeconds: oldest };
  }

  /** Read from the cheapest delta shapes keeping every dimension the query groups or filters by: days and hours (inventory/shapes.ts planStorage). */
  storage(tenantId: number, q: StorageStoreQuery): StorageWindowSums[] {
    const where: string[] = [];
    for (const [dimension, values] of Object.entries(q.filters) as [Dimension, string[]][]) {
      const ids = this.#filterIds(dimension, values);
      if (ids.length === 0) return [];
      where.push(`u.${DIMENSION_COLUMN[dimension]} IN (${ids.join(', ')})`);
    }
    const groups = q.groupBy.map((d) => `u.${DIMENSION_COLUMN[d]}`);
    const filter = where.map((w) => ` AND ${w}`).join('');
    const g = groups.map((c) => `, ${c}`).join('');
    const n = q.groupBy.length;
    // The wide sums' parts joined in SQL; a sum past 64 bits is read again in parts (wide.ts).
    const read = (parts: boolean) => {
      const rows: TermRow[] = [];
      for (const { shape, spans } of planStorage([...q.groupBy, ...(Object.keys(q.filters) as Dimension[])], q.bounds)) {
        const time = `u.${shape.grain}`;
        const statement = this.#prepare(`WITH w(i, s, e, we) AS (SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(?))
SELECT w.i${g}, ${sumsSql(shape, 'i', 'we', parts).join(', ')} FROM w CROSS JOIN ${shape.table} u ON u.tenant = ? AND ${time} >= w.s AND ${time} < w.e WHERE true${filter}
GROUP BY w.i${g}`).raw(true).safeIntegers(true);
        for (const r of integerSums(() => statement.all(JSON.stringify(spans.map((x) => [x.window, x.from, x.to, x.end])), tenantId) as bigint[][])) {
          rows.push({ window: Number(r[0]), ids: r.slice(1, 1 + n).map(Number), sums: parts ? sumsOf(r, 1 + n) : r.slice(1 + n) });
        }
      }
      return rows;
    };
    let rows: TermRow[];
    try {
      rows = read(false);
    } catch (err) {
      if (!(err instanceof SumOutOfRangeError)) throw err;
      rows = read(true);
    }
    return addTerms(rows).map((row) => ({ window: row.window, values: q.groupBy.map((d, i) => this.#value(d, row.ids[i]!)), sums: row.sums }));
  }

  objects(tenantId: number, q: ObjectsStoreQuery): InventoryEntryRecord[] {
    const bucket = this.#dictId(q.bucket);
    if (bucket === undefined) return [];
    const params: unknown[] = [tenantId, bucket, q.at, q.at];
    let where = '';
    if (q.prefix !== undefined && q.prefix !== '') {
      where += ' AND object_key >= ? AND substr(object_key, 1, ?) = ?';
      // SQLite's substr counts characters; a JS length counts UTF-16 units (two for an emoji).
      params.push(q.prefix, [...q.prefix].length, q.prefix);
    }
    if (q.after !== undefined) {
      where += ' AND object_key >= ?';
      params.push(q.after.objectKey);
    }
    if (q.customerId !== undefined) {
      const customer = this.#dictId(q.customerId);
      if (customer === undefined) return [];
      where += ' AND customer = ?';
      params.push(customer);
    }
    const sql = `SELECT ${ENTRY_COLUMNS} FROM inventory INDEXED BY inventory_key
WHERE tenant = ? AND bucket = ? AND kind IN (0, 1) AND started <= ? AND (ended IS NULL OR ended > ?)${where}
ORDER BY object_key, started DESC, ${rankSql('action')} DESC, created_by DESC`;
    return pickEntries(this.#prepare(sql).raw(true).safeIntegers(false).iterate(...params) as Iterable<EntryRow>, q, (row) => this.#record(row));
  }

  storageDeltas(tenantId: number, from: number, to: number): { opening: { key: StorageKey; bytes: bigint }[]; deltas: StorageDeltaRow[] } {
    const cols = `provider, bucket, customer, feature, client_type, client_id, action`;
    // A key's ids as one text made by SQLite: the key's object is looked up by it (#storageKeys).
    const ids = cols.split(', ').join(` || ',' || `);
    // Wide sums (store/wide.ts): a value is 0 when its parts join to 0, which they can without being 0:
    // HAVING drops the keys whose parts are both 0 (most of the churned ones), the filter below the rest.
    const bytesHi = highColumn('bytes');
    const tailHi = highColumn('tail');
    const opening = this.#prepare(`SELECT ${ids}, sum(bytes), sum(${bytesHi}) FROM inventory_hours WHERE tenant = ? AND hour < ? GROUP BY ${cols}
  HAVING sum(bytes) <> 0 OR sum(${bytesHi}) <> 0`)
      .raw(true)
      .safeIntegers(true)
      .iterate(tenantId, Math.floor(from / 3600)) as Iterable<[string, bigint, bigint]>;
    const keyOf = this.#storageKeys();
    const open: { key: StorageKey; bytes: bigint }[] = [];
    for (const [key, low, high] of opening) {
      const bytes = join(low, high);
      if (bytes !== 0n) open.push({ key: keyOf(key), bytes });
    }
    const rows = this.#prepare(`SELECT hour, ${ids}, bytes, tail, ${bytesHi}, ${tailHi} FROM inventory_hours WHERE tenant = ? AND hour >= ? AND hour < ?
  AND (bytes <> 0 OR tail <> 0 OR ${bytesHi} <> 0 OR ${tailHi} <> 0) ORDER BY hour`)
      .raw(true)
      .safeIntegers(true)
      .iterate(tenantId, Math.floor(from / 3600), Math.ceil(to / 3600)) as Iterable<[bigint, string, bigint, bigint, bigint, bigint]>;
    const deltas: StorageDeltaRow[] = [];
    // Iterated, not read whole: each row's array is garbage at once, not after the last row is read
    // (read whole, the rows of a month outlived young collections: their cost grew faster than their number).
    for (const [hour, key, bytesLow, tailLow, bytesHigh, tailHigh] of rows) {
      const d = { hour: Number(hour) * 3600, key: keyOf(key), bytes: join(bytesLow, bytesHigh), tailByteSeconds: join(tailLow, tailHigh) };
      if (d.bytes !== 0n || d.tailByteSeconds !== 0n) deltas.push(d);
    }
    return { opening: open, deltas };
  }

  storageIntervals(tenantId: number, from: number, to: number, filter: StorageIntervalFilter): StorageInterval[] {
    const params: unknown[] = [tenantId, to, from];
    let where = '';
    if (filter.buckets !== undefined) {
      const ids = filter.buckets.map((b) => this.#dictId(b)).filter((id) => id !== undefined);
      if (ids.length === 0) return [];
      where += ` AND bucket IN (${ids.join(', ')})`;
    }
    if (filter.providers !== undefined) {
      const ids = this.#filterIds('provider', filter.providers);
      if (ids.length === 0) return [];
      where += ` AND provider IN (${ids.join(', ')})`;
    }
    if (filter.smallerThan !== undefined) {
      where += ' AND size IS NOT NULL AND size < ?';
      params.push(filter.smallerThan);
    }
    if (filter.endedYoungerThan !== undefined) {
      where += ' AND ended IS NOT NULL AND ended >= ? AND ended < ? AND ended - started < ?';
      params.push(from, to, filter.endedYoungerThan);
    }
    const rows = this.#prepare(`SELECT ${ENTRY_COLUMNS} FROM inventory WHERE tenant = ? AND kind <> 3 AND started < ? AND (ended IS NULL OR ended > ?)${where}`)
      .raw(true)
      .iterate(...params) as Iterable<EntryRow>;
    const keyOf = this.#storageKeys();
    const out: StorageInterval[] = [];
    for (const r of rows) {
      const e = entryOf(r);
      out.push({
        kind: e.kind as StorageInterval['kind'],
        key: keyOf(`${r[11]},${r[2]},${r[12]},${r[13]},${r[14]},${r[15]},${r[10]}`),
        objectKey: e.objectKey ?? '',
        versionId: e.versionId,
        size: e.size,
        start: e.start,
        end: e.end,
        createdBy: e.createdBy,
        endedBy: e.endedBy,
      });
    }
    return out;
  }

  /**
   * The StorageKey of 'provider,bucket,customer,feature,client_type,client_id,action' ids, one object
   * per key for the read: a month's rows name far fewer keys than they are, and the cost feeder
   * finds a key by its object.
   */
  #storageKeys(): (ids: string) => StorageKey {
    return memoized((ids) => {
      const [provider, bucket, customer, feature, clientType, clientId, action] = ids.split(',').map(Number) as [number, number, number, number, number, number, number];
      const v = (id: number) => this.#text(id);
      return { provider: v(provider), bucket: v(bucket), customerId: v(customer), featureId: v(feature), clientType: v(clientType), clientId: v(clientId), action: actionOf(action) };
    });
  }

  #record(r: EntryRow): InventoryEntryRecord {
    return {
      id: r[0],
      objectKey: r[3]!,
      versionId: r[4],
      deleteMarker: r[1] === KIND_CODE.marker,
      size: r[7] === null ? null : BigInt(r[7]),
      created: {
        at: r[8],
        eventId: r[9],
        action: actionOf(r[10]),
        provider: this.#text(r[11]),
        customerId: this.#text(r[12]),
        featureId: this.#text(r[13]),
        clientType: this.#text(r[14]),
        clientId: this.#text(r[15]),
      },
      ended: r[16] === null ? null : { at: r[16], eventId: r[17]! },
    };
  }

  #value(d: Dimension, id: number): string | null {
    if (d === 'action') return actionOf(id);
    return this.#text(id);
  }

  #text(id: number): string | null {
    if (id === 0) return null;
    let value = this.#dict.get(id);
    if (value === undefined) {
      value = this.#prepare('SELECT value FROM dict WHERE id = ?').pluck().get(id) as string;
      this.#dict.set(id, value);
    }
    return value;
  }

  #dictId(value: string): number | undefined {
    return this.#prepare('SELECT id FROM dict WHERE value = ?').pluck().get(value) as number | undefined;
  }

  #filterIds(dimension: Dimension, values: string[]): number[] {
    if (dimension === 'action') return values.filter((v): v is ActionName => Object.hasOwn(KINDS, v)).map((name) => KINDS[name].code);
    const ids = values.includes('') ? [0] : [];
    for (const v of values) {
      if (v === '') continue;
      const id = this.#dictId(v);
      if (id !== undefined) ids.push(id);
    }
    return ids;
  }

  #prepare(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      if (this.#statements.size >= STATEMENT_CACHE) this.#statements.delete(this.#statements.keys().next().value!);
      statement = this.db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }
}
