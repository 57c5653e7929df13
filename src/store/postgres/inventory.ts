/**
 * PostgreSQL's object inventory: as SQLite's (sqlite/inventory.ts). Each event commit adds one outbox
 * row per tenant (inventoryOutboxCte / inventoryOutboxAfterCopyCte); catchUp, from any node, takes a session
 * advisory lock, then in one REPEATABLE READ transaction reads the outbox and the events in the same
 * snapshot, logs their events (inventory_log), replays what they can change, and deletes exactly the
 * outbox rows it read. A commit not in that snapshot has its outbox row left for the next catch-up,
 * which logs its events then and replays what they change (what they touch, from their times; the log
 * holds every event applied before): nothing is missed, whatever the order in which transactions commit.
 */
import type { Pool, PoolClient } from 'pg';
import { KINDS } from '../../events/catalogue.js';
import type { ActionName } from '../../events/catalogue.js';
import { KIND_CODE, actionOf, attribution, compareInventory, kindOf, pickEntries, restFields } from '../../inventory/rows.js';
import { Closure, FROM_THE_START, compareEntries, deltaKey, nodeBucket, redo, splitKey, touches } from '../../inventory/timeline.js';
import type { Entry, TimelineEvent } from '../../inventory/timeline.js';
import {
  COARSE_SHAPES, DELTA_COLUMNS, DIMENSION_COLUMNS, FINE_SHAPE, addTerms, compareShapes, dimensionColumns, dimensionIds, planStorage, project, storedValueColumns, sumsOf, sumsSql,
  valueColumns, WIDE_VALUE_COLUMNS, wideValuePositions,
} from '../../inventory/shapes.js';
import { addSetSql, fromStored, highColumn, join, toStored } from '../wide.js';
import { inRange } from './sums.js';
import type { ShapeRow, StorageShape } from '../../inventory/shapes.js';
import { DIMENSION_COLUMN } from '../../usage/shapes.js';
import type { Dimension } from '../../usage/shapes.js';
import { FOLD_BEFORE_READ_MS, SumOutOfRangeError, inventoryBacklog, serverEventId } from '../types.js';
import { byDeadline } from '../deadline.js';
import type {
  InventoryDifference, InventoryEntryRecord, InventoryLag, InventoryStore, ObjectsStoreQuery, StorageDeltaRow, StorageFeed, StorageInterval,
  StorageIntervalFilter, StorageKey, StorageStoreQuery, StorageWindowSums,
} from '../types.js';
import { intArray, textArray } from './arrays.js';
import { CancellableReads } from './cancellable.js';
import { fromPgText, toPgText } from './encode.js';
import { serialized } from './serialized.js';
import { ACTIONS, aliveAtSql } from './inventory-sql.js';
import { POSTGRES_CATCH_UP_SPAN, outboxStepSql } from '../inventory-step.js';
import { BackgroundPace } from '../background-pace.js';
import { countRebuildSql, EVERY_TENANT } from '../rebuilds.js';
import type { RebuildKind } from '../rebuilds.js';

const LOCK_INVENTORY = 5;

const ENTRY_COLUMNS = 'id, kind, bucket, object_key, version_id, upload_id, part_number, size, started, created_by, action, provider, customer, feature, client_type, client_id, ended, ended_by';
type EntryRow = [string, number, number, string | null, string | null, string | null, number | null, string | null, string, string, number, number, number, number, number, number, string | null, string | null];

function entryOf(r: EntryRow): Entry {
  return {
    id: Number(r[0]),
    kind: kindOf(r[1]),
    bucket: String(r[2]),
    objectKey: r[3],
    versionId: r[4],
    uploadId: r[5],
    partNumber: r[6],
    size: r[7] === null ? null : BigInt(r[7]),
    start: Number(r[8]),
    createdBy: r[9],
    action: actionOf(r[10]),
    attribution: attribution(r[11], r[12], r[13], r[14], r[15]),
    end: r[16] === null ? null : Number(r[16]),
    endedBy: r[17],
  };
}

const EVENTS_SQL = `SELECT seq, ts, action, provider_id, coalesce(customer_id, 0), coalesce(feature_id, 0), coalesce(client_type_id, 0), coalesce(client_id, 0),
  bucket_id, object_key, version_id, upload_id, bytes, part_number, event_id, rest
FROM events WHERE tenant_id = $1 AND action IN (${ACTIONS}) AND bucket_id IS NOT NULL`;
const EVENTS_FROM = `${EVENTS_SQL} AND ts >= $2`;

/** The log's node code of a touches() node. */
const NODE_CODE: Record<string, number> = { k: 0, u: 1, b: 2 };
/** The inventory joined with key nodes ($2 buckets, $3 object keys, $4 the times they are replayed from). */
const KEYS_JOIN = 'inventory i JOIN unnest($2::integer[], $3::text[], $4::bigint[]) AS k(b, o, f) ON i.bucket = k.b AND i.object_key = k.o';
const nodeName = (n: string) => (n[0] === 'b' ? '' : splitKey(n.slice(1))[1]);
type EventRow = [string, string, number, number, number, number, number, number, number | null, string | null, string | null, string | null, string | null, number | null, string | null, string | null];

export class PostgresInventory implements InventoryStore, StorageFeed {
  constructor(
    private readonly pool: Pool,
    private readonly guarded: <T>(run: () => Promise<T>) => Promise<T>,
    /** How long a read waits for the catch-up before answering 503 (the catch-up runs on). */
    private readonly catchUpBeforeReadMs = FOLD_BEFORE_READ_MS,
    private readonly reads = new CancellableReads(pool),
    /** Seqs of pending events one catch-up step applies. */
    private readonly catchUpSpan = POSTGRES_CATCH_UP_SPAN,
    /** The background catch-up's pace (no commits seen: every call runs). */
    private readonly pace = new BackgroundPace(() => Number.NEGATIVE_INFINITY),
  ) {}

  /** The catch-up a read waits for: every event committed before it, within its budget (nothing pending: no wait). */
  async #caughtUp(): Promise<void> {
    if (!(await this.#pending())) return;
    await byDeadline(this.#apply(), Date.now() + this.catchUpBeforeReadMs, inventoryBacklog);
  }

  async #pending(): Promise<boolean> {
    const { rows } = await this.guarded(() => this.pool.query('SELECT 1 FROM inventory_outbox LIMIT 1'));
    return rows.length > 0;
  }

  async catchUp(options?: { background?: boolean }): Promise<void> {
    // Nothing pending (the usual case): no lock, no transaction.
    const run = async () => {
      if (await this.#pending()) await this.#apply();
    };
    await (options?.background === true ? this.pace.run(run) : run());
  }

  /**
   * Applies the pending outbox rows up to the newest when it begins (what is committed meanwhile is
   * for the next catch-up), a step (inventory-step.ts) per transaction under the lock.
   */
  async #apply(): Promise<void> {
    const { rows } = await this.guarded(() => this.pool.query<[string]>({ text: 'SELECT coalesce(max(id), 0) FROM inventory_outbox', rowMode: 'array' }));
    const upTo = rows[0]![0];
    while (await this.#step(upTo));
  }

  /** Applies the oldest pending outbox rows up to id `upTo`, about catchUpSpan seqs; whether any up to it are left. */
  #step(upTo: string): Promise<boolean> {
    return this.#locked(async (c) => {
      const { rows } = await c.query<[number, string[], string[], string[]]>({
        text: `SELECT tenant, array_agg(first_seq), array_agg(last_seq), array_agg(id) FROM (${outboxStepSql('$1', '$2')}) step GROUP BY tenant`,
        values: [this.catchUpSpan, upTo],
        rowMode: 'array',
      });
      for (const [tenant, firsts, lasts, ids] of rows) {
        const ranges = firsts.map((f, i) => [Number(f), Number(lasts[i])] as const);
        const isNew = (seq: number) => ranges.some(([first, last]) => seq >= first && seq <= last);
        // One read over the span of the pending transactions' seqs, kept where a transaction's range holds them.
        const span = await this.#read(c, tenant, `${EVENTS_SQL} AND seq >= $2 AND seq <= $3`, [Math.min(...ranges.map((r) => r[0])), Math.max(...ranges.map((r) => r[1]))]);
        const fresh = new Map([...span].filter(([seq]) => isNew(seq)));
        const names = this.#names(c);
        const closure = new Closure();
        for (const [seq, e] of fresh) closure.add(seq, e, true);
        // Logged after the closure's reads of the log: they need not find the new events, all in it from the start.
        await this.#close(c, tenant, closure, names);
        await this.#log(c, tenant, fresh, names);
        await this.#recompute(c, tenant, closure);
        await c.query('DELETE FROM inventory_outbox WHERE id = ANY($1::bigint[])', [intArray(ids)]);
      }
      return (await c.query('SELECT 1 FROM inventory_outbox WHERE id <= $1 LIMIT 1', [upTo])).rows.length > 0;
    });
  }

  rebuild(tenantId: number | null): Promise<void> {
    return this.#locked(async (c) => {
      for (const tenant of await this.#tenants(c, tenantId)) {
        await c.query('DELETE FROM inventory WHERE tenant = $1', [tenant]);
        await c.query('DELETE FROM inventory_hours WHERE tenant = $1', [tenant]);
        for (const shape of COARSE_SHAPES) await c.query(`DELETE FROM ${shape.table} WHERE tenant = $1`, [tenant]);
        await c.query('DELETE FROM inventory_outbox WHERE tenant = $1', [tenant]);
        await c.query('DELETE FROM inventory_log WHERE tenant = $1', [tenant]);
        const all = await this.#read(c, tenant, EVENTS_FROM, [Number.MIN_SAFE_INTEGER]);
        await this.#log(c, tenant, all, this.#names(c));
        await this.#write(c, tenant, redo([], [...all.values()], FROM_THE_START));
      }
      // In the same transaction: a process keeping answers sees the new inventory and the new count together.
      await c.query(countRebuildSql('$1', '$2'), [tenantId ?? EVERY_TENANT, 'inventory' satisfies RebuildKind]);
    });
  }

  async verify(tenantId: number | null): Promise<InventoryDifference[]> {
    await this.#caughtUp();
    return this.#locked(async (c) => {
      const out: InventoryDifference[] = [];
      for (const tenant of await this.#tenants(c, tenantId)) {
        const { rows } = await c.query<EntryRow>({ text: `SELECT ${ENTRY_COLUMNS} FROM inventory WHERE tenant = $1`, values: [tenant], rowMode: 'array' });
        const hours = new Map<string, bigint[]>();
        const h = await c.query<string[]>({
          text: `SELECT hour, bucket, action, provider, customer, feature, client_type, client_id, ${storedValueColumns(FINE_SHAPE).map((x) => `${x}::text`).join(', ')} FROM inventory_hours WHERE tenant = $1`,
          values: [tenant],
          rowMode: 'array',
        });
        const fine: ShapeRow[] = [];
        for (const r of h.rows) {
          const a = attribution(Number(r[3]), Number(r[4]), Number(r[5]), Number(r[6]), Number(r[7]));
          const values = fromStored(r.slice(8).map((v) => BigInt(v)), 0, DELTA_COLUMNS.length, wideValuePositions(FINE_SHAPE));
          hours.set(deltaKey(Number(r[0]) * 3600, String(r[1]), actionOf(Number(r[2])), a), values);
          fine.push({ time: Number(r[0]), ids: [r[3], r[1], r[4], r[5], r[6], r[7], r[2]].map(Number), values });
        }
        out.push(...compareInventory(tenant, [...(await this.#read(c, tenant, EVENTS_FROM, [Number.MIN_SAFE_INTEGER])).values()], rows.map(entryOf), hours));
        const coarse = new Map<StorageShape, ShapeRow[]>();
        for (const shape of COARSE_SHAPES) {
          const n = shape.dimensions.length;
          const stored = await c.query<string[]>({
            text: `SELECT ${shape.grain}, ${dimensionColumns(shape).join(', ')}, ${storedValueColumns(shape).map((x) => `${x}::text`).join(', ')} FROM ${shape.table} WHERE tenant = $1`,
            values: [tenant],
            rowMode: 'array',
          });
          const count = valueColumns(shape).length;
          const wide = wideValuePositions(shape);
          coarse.set(shape, stored.rows.map((r) => ({ time: Number(r[0]), ids: r.slice(1, 1 + n).map(Number), values: fromStored(r.slice(1 + n).map((v) => BigInt(v)), 0, count, wide) })));
        }
        out.push(...compareShapes(tenant, fine, coarse));
      }
      return out;
    });
  }

  async lag(): Promise<InventoryLag> {
    const { rows } = await this.guarded(() =>
      this.pool.query<[string, string]>({ text: 'SELECT count(*), coalesce(extract(epoch FROM now())::bigint - min(at), 0) FROM inventory_outbox', rowMode: 'array' }),
    );
    return { pending: Number(rows[0]![0]), oldestSeconds: Number(rows[0]![1]) };
  }

  /** Read from the cheapest delta shapes keeping every dimension the query groups or filters by: days and hours (inventory/shapes.ts planStorage). */
  async storage(tenantId: number, q: StorageStoreQuery, signal?: AbortSignal): Promise<StorageWindowSums[]> {
    this.reads.check(signal);
    await this.#caughtUp();
    const where: string[] = [];
    for (const [dimension, values] of Object.entries(q.filters) as [Dimension, string[]][]) {
      const ids = await this.#filterIds(dimension, values);
      if (ids.length === 0) return [];
      where.push(`u.${DIMENSION_COLUMN[dimension]} IN (${ids.join(', ')})`);
    }
    const groups = q.groupBy.map((d) => `u.${DIMENSION_COLUMN[d]}`);
    const g = groups.map((c) => `, ${c}`).join('');
    const filter = where.map((w) => ` AND ${w}`).join('');
    // Each term one index range scan per span, all in one statement.
    const values: unknown[] = [tenantId];
    const terms = planStorage([...q.groupBy, ...(Object.keys(q.filters) as Dimension[])], q.bounds).map(({ shape, spans }) => {
      const at = values.length;
      values.push(spans.map((x) => x.window), spans.map((x) => x.from), spans.map((x) => x.to), spans.map((x) => x.end));
      return { shape, at };
    });
    const sql = (parts: boolean) =>
      terms.map(({ shape, at }) => {
        const time = `u.${shape.grain}`;
        return `SELECT w.i${g}, ${sumsSql(shape, 'i', 'we', parts).map((x) => `${x}::text`).join(', ')}
FROM unnest($${at + 1}::integer[], $${at + 2}::integer[], $${at + 3}::integer[], $${at + 4}::integer[]) AS w(i, s, e, we)
JOIN ${shape.table} u ON u.tenant = $1 AND ${time} >= w.s AND ${time} < w.e WHERE true${filter}
GROUP BY w.i${g}`;
      });
    const read = (parts: boolean) => inRange(this.guarded(() => this.reads.query<(string | number)[]>({ text: sql(parts).join('\nUNION ALL\n'), values, rowMode: 'array' }, signal)));
    // The wide sums' parts joined in SQL; a product past 64 bits is read again in parts (wide.ts).
    let parts = false;
    const { rows } = await read(false).catch((err: unknown) => {
      if (!(err instanceof SumOutOfRangeError)) throw err;
      parts = true;
      return read(true);
    });
    const n = q.groupBy.length;
    const ids = new Set<number>();
    for (const row of rows) {
      q.groupBy.forEach((d, i) => {
        if (d !== 'action') ids.add(Number(row[1 + i]));
      });
    }
    const texts = await this.#texts([...ids]);
    const added = addTerms(rows.map((row) => ({ window: Number(row[0]), ids: row.slice(1, 1 + n).map(Number), sums: parts ? sumsOf(row.slice(1 + n).map((v) => BigInt(v)), 0) : row.slice(1 + n).map((v) => BigInt(v)) })));
    return added.map((row) => ({
      window: row.window,
      values: q.groupBy.map((d, i) => (d === 'action' ? actionOf(row.ids[i]!) : (texts.get(row.ids[i]!) ?? null))),
      sums: row.sums,
    }));
  }

  async objects(tenantId: number, q: ObjectsStoreQuery, signal?: AbortSignal): Promise<InventoryEntryRecord[]> {
    this.reads.check(signal);
    await this.#caughtUp();
    const [bucket] = await this.#ids([q.bucket]);
    if (bucket === undefined) return [];
    const params: unknown[] = [tenantId, bucket, q.at];
    let where = '';
    if (q.prefix !== undefined && q.prefix !== '') {
      params.push(toPgText(q.prefix));
      where += ` AND object_key >= $${params.length} AND starts_with(object_key, $${params.length})`;
    }
    if (q.after !== undefined) {
      params.push(toPgText(q.after.objectKey));
      where += ` AND object_key >= $${params.length}`;
    }
    if (q.customerId !== undefined) {
      const [customer] = await this.#ids([q.customerId]);
      if (customer === undefined) return [];
      params.push(customer);
      where += ` AND customer = $${params.length}`;
    }
    // Index order (key, newest second first); ties within a second are put in timeline order here.
    // Enough rows for the page in most cases; read again with more when keys repeat (versions, the cursor's key).
    for (let want = q.limit * 2 + 10; ; want *= 4) {
      const { rows } = await this.guarded(() =>
        this.reads.query<EntryRow>(
          {
            text: `SELECT ${ENTRY_COLUMNS} FROM inventory WHERE tenant = $1 AND bucket = $2 AND kind IN (0, 1) AND started <= $3 AND (ended IS NULL OR ended > $3)${where}
ORDER BY object_key, started DESC LIMIT ${want}`,
            values: params,
            rowMode: 'array',
          },
          signal,
        ),
      );
      const complete = rows.length < want;
      // The last key may continue past this read: left for a larger one.
      const lastKey = rows[rows.length - 1]?.[3];
      const usable = (complete ? rows : rows.filter((r) => r[3] !== lastKey)).map((r) => [Number(r[0]), ...r.slice(1)] as unknown as EntryRow);
      usable.sort((a, b) => (a[3]! < b[3]! ? -1 : a[3]! > b[3]! ? 1 : -compareEntries(entryOf(a), entryOf(b))));
      const after = q.after === undefined ? undefined : { ...q.after, objectKey: toPgText(q.after.objectKey) };
      const picked: EntryRow[] = [];
      pickEntries(usable as unknown as [number, number, number, string | null][], { ...q, after }, (r) => {
        picked.push(r as unknown as EntryRow);
        return undefined as never;
      });
      if (picked.length >= q.limit || complete) return this.#records(picked);
    }
  }

  async storageDeltas(tenantId: number, from: number, to: number): Promise<{ opening: { key: StorageKey; bytes: bigint }[]; deltas: StorageDeltaRow[] }> {
    await this.#caughtUp();
    const cols = DIMENSION_COLUMNS.join(', ');
    const opening = await this.guarded(() =>
      this.pool.query<(number | string)[]>({
        text: `SELECT ${cols}, sum(bytes)::text, sum(${highColumn('bytes')})::text FROM inventory_hours WHERE tenant = $1 AND hour < $2 GROUP BY ${cols}
          HAVING sum(bytes) <> 0 OR sum(${highColumn('bytes')}) <> 0`,
        values: [tenantId, Math.floor(from / 3600)],
        rowMode: 'array',
      }),
    );
    const rows = await this.guarded(() =>
      this.pool.query<(number | string)[]>({
        text: `SELECT hour, ${cols}, bytes::text, tail::text, ${highColumn('bytes')}::text, ${highColumn('tail')}::text FROM inventory_hours
          WHERE tenant = $1 AND hour >= $2 AND hour < $3 AND (bytes <> 0 OR tail <> 0 OR ${highColumn('bytes')} <> 0 OR ${highColumn('tail')} <> 0) ORDER BY hour`,
        values: [tenantId, Math.floor(from / 3600), Math.ceil(to / 3600)],
        rowMode: 'array',
      }),
    );
    const keyOf = await this.#keyMaker([...opening.rows.map((r) => r.slice(0, 7)), ...rows.rows.map((r) => r.slice(1, 8))]);
    // Wide sums (store/wide.ts): a value is 0 when its parts join to 0, which they can without being 0
    // (HAVING above keeps every key with a part not 0: the keys whose bytes are all gone stay out).
    const big = (v: unknown) => BigInt(v as string);
    return {
      opening: opening.rows.map((r) => ({ key: keyOf(r.slice(0, 7)), bytes: join(big(r[7]), big(r[8])) })).filter((o) => o.bytes !== 0n),
      deltas: rows.rows
        .map((r) => ({ hour: Number(r[0]) * 3600, key: keyOf(r.slice(1, 8)), bytes: join(big(r[8]), big(r[10])), tailByteSeconds: join(big(r[9]), big(r[11])) }))
        .filter((d) => d.bytes !== 0n || d.tailByteSeconds !== 0n),
    };
  }

  async storageIntervals(tenantId: number, from: number, to: number, filter: StorageIntervalFilter): Promise<StorageInterval[]> {
    await this.#caughtUp();
    const params: unknown[] = [tenantId, to, from];
    let where = '';
    if (filter.buckets !== undefined) {
      const ids = (await this.#ids(filter.buckets)).filter((id) => id !== undefined);
      if (ids.length === 0) return [];
      where += ` AND bucket IN (${ids.join(', ')})`;
    }
    if (filter.providers !== undefined) {
      // '' is none: id 0.
      const named = filter.providers.filter((p) => p !== '');
      const ids = [...(filter.providers.includes('') ? [0] : []), ...(await this.#ids(named)).filter((id) => id !== undefined)];
      if (ids.length === 0) return [];
      where += ` AND provider IN (${ids.join(', ')})`;
    }
    if (filter.smallerThan !== undefined) {
      params.push(filter.smallerThan.toString());
      where += ` AND size IS NOT NULL AND size < $${params.length}`;
    }
    if (filter.endedYoungerThan !== undefined) {
      params.push(filter.endedYoungerThan);
      where += ` AND ended IS NOT NULL AND ended >= $3 AND ended < $2 AND ended - started < $${params.length}`;
    }
    const { rows } = await this.guarded(() =>
      this.pool.query<EntryRow>({
        text: `SELECT ${ENTRY_COLUMNS} FROM inventory WHERE tenant = $1 AND kind <> 3 AND started < $2 AND (ended IS NULL OR ended > $3)${where}`,
        values: params,
        rowMode: 'array',
      }),
    );
    const keyOf = await this.#keyMaker(rows.map((r) => [r[11], r[2], r[12], r[13], r[14], r[15], r[10]]));
    return rows.map((r) => {
      const e = entryOf(r);
      return {
        kind: e.kind as StorageInterval['kind'],
        key: keyOf([r[11], r[2], r[12], r[13], r[14], r[15], r[10]]),
        objectKey: e.objectKey === null ? '' : fromPgText(e.objectKey),
        versionId: e.versionId === null ? null : fromPgText(e.versionId),
        size: e.size,
        start: e.start,
        end: e.end,
        createdBy: e.createdBy,
        endedBy: e.endedBy,
      };
    });
  }

  /** One at a time across every node (serialized.ts). */
  #locked<T>(work: (c: PoolClient) => Promise<T>): Promise<T> {
    return this.guarded(() => serialized(this.pool, LOCK_INVENTORY, work));
  }

  async #tenants(c: PoolClient, tenantId: number | null): Promise<number[]> {
    if (tenantId !== null) return [tenantId];
    const { rows } = await c.query<{ id: number }>('SELECT id FROM tenants');
    return rows.map((r) => r.id);
  }

  /** The tenant's inventory events a query selects ($1 the tenant, `values` after it), by seq. */
  async #read(c: PoolClient, tenant: number, text: string, values: unknown[]): Promise<Map<number, TimelineEvent>> {
    const { rows } = await c.query<EventRow>({ text, values: [tenant, ...values], rowMode: 'array' });
    const sourceBuckets = new Set<string>();
    const out = new Map<number, TimelineEvent>();
    for (const r of rows) {
      const e: TimelineEvent = {
        ts: Number(r[1]),
        action: actionOf(r[2]),
        eventId: r[14] === null ? serverEventId(BigInt(r[0])) : fromPgText(r[14]),
        bucket: String(r[8]),
        attribution: attribution(r[3], r[4], r[5], r[6], r[7]),
      };
      // Strings as the events table stores them (toPgText), so rest fields compare with columns.
      if (r[9] !== null) e.objectKey = r[9];
      if (r[10] !== null) e.versionId = r[10];
      if (r[11] !== null) e.uploadId = r[11];
      if (r[12] !== null) e.bytes = Number(r[12]);
      if (r[13] !== null) e.partNumber = r[13];
      // Fields only set, never set and deleted: a deleted property turns the object into a slow
      // dictionary one, and the replay reads every event's fields many times.
      const rest = restFields(r[15]);
      if (rest.copySource !== undefined) e.copySource = rest.copySource;
      if (rest.hardDeletedVersionId !== undefined) e.hardDeletedVersionId = toPgText(rest.hardDeletedVersionId);
      if (rest.resultingDeleteMarkerVersionId !== undefined) e.resultingDeleteMarkerVersionId = toPgText(rest.resultingDeleteMarkerVersionId);
      if (rest.force !== undefined) e.force = rest.force;
      if (rest.deletedObjects !== undefined) {
        e.deletedObjects = rest.deletedObjects.map((d) => ({
          objectKey: toPgText(d.objectKey),
          ...(d.hardDeletedVersionId === undefined ? {} : { hardDeletedVersionId: toPgText(d.hardDeletedVersionId) }),
          ...(d.resultingDeleteMarkerVersionId === undefined ? {} : { resultingDeleteMarkerVersionId: toPgText(d.resultingDeleteMarkerVersionId) }),
        }));
      }
      if (e.copySource !== undefined) sourceBuckets.add(e.copySource.bucket);
      out.set(Number(r[0]), e);
    }
    if (sourceBuckets.size > 0) {
      const names = [...sourceBuckets];
      const ids = await this.#ids(names, c);
      const byName = new Map(names.map((name, i) => [name, ids[i] === undefined ? `?${name}` : String(ids[i])]));
      for (const e of out.values()) {
        if (e.copySource === undefined) continue;
        const s = e.copySource;
        e.copySource = { bucket: byName.get(s.bucket)!, objectKey: toPgText(s.objectKey), ...(s.versionId === undefined ? {} : { versionId: toPgText(s.versionId) }) };
      }
    }
    return out;
  }

  /** A node's bucket by name, as the log keeps it (as SQLite's #names; dictionary values are stored encoded). */
  #names(c: PoolClient): (buckets: string[]) => Promise<string[]> {
    const names = new Map<string, string>();
    return async (buckets) => {
      const ids = [...new Set(buckets.filter((b) => !b.startsWith('?') && !names.has(b)))];
      if (ids.length > 0) {
        const { rows } = await c.query<{ id: number; value: string }>('SELECT id, value FROM dict WHERE id = ANY($1::integer[])', [intArray(ids)]);
        for (const r of rows) names.set(String(r.id), r.value);
      }
      return buckets.map((b) => (b.startsWith('?') ? toPgText(b.slice(1)) : names.get(b)!));
    };
  }

  async #log(c: PoolClient, tenant: number, events: Map<number, TimelineEvent>, names: (buckets: string[]) => Promise<string[]>): Promise<void> {
    const nodes: string[] = [];
    const ts: number[] = [];
    const seqs: number[] = [];
    for (const [seq, e] of events) {
      for (const n of touches(e)) {
        nodes.push(n);
        ts.push(e.ts);
        seqs.push(seq);
      }
    }
    if (nodes.length === 0) return;
    await c.query(
      `INSERT INTO inventory_log (tenant, bucket, node, name, ts, seq) SELECT $1, * FROM unnest($2::text[], $3::smallint[], $4::text[], $5::bigint[], $6::bigint[])
       ON CONFLICT DO NOTHING`,
      [tenant, textArray(await names(nodes.map(nodeBucket))), intArray(nodes.map((n) => NODE_CODE[n[0]!]!)), textArray(nodes.map(nodeName)), intArray(ts), intArray(seqs)],
    );
  }

  /** Reads what the closure asks until it is closed: one query per kind of read per step. */
  async #close(c: PoolClient, tenant: number, closure: Closure, names: (buckets: string[]) => Promise<string[]>): Promise<void> {
    for (let step = closure.next(); step !== null; step = closure.next()) {
      const seqs = new Set<string>();
      if (step.nodes.length > 0) {
        const nodes = step.nodes.map(([n]) => n);
        const { rows } = await c.query<[string]>({
          text: `SELECT DISTINCT l.seq FROM inventory_log l JOIN unnest($2::text[], $3::smallint[], $4::text[], $5::bigint[]) AS n(b, k, m, f)
            ON l.bucket = n.b AND l.node = n.k AND l.name = n.m AND l.ts >= n.f WHERE l.tenant = $1`,
          values: [tenant, textArray(await names(nodes.map(nodeBucket))), intArray(nodes.map((n) => NODE_CODE[n[0]!]!)), textArray(nodes.map(nodeName)), intArray(step.nodes.map(([, f]) => f))],
          rowMode: 'array',
        });
        for (const [seq] of rows) seqs.add(seq);
        const keys = step.nodes.filter(([n]) => n[0] === 'k' && n[1] !== '?').map(([n, f]) => [...splitKey(n.slice(1)), f] as const);
        if (keys.length > 0) {
          // Made before k.f is tested here: in SQL, PostgreSQL reads the key's entries by start instead.
          const uploads = await c.query<[number, string, string, string]>({
            text: aliveAtSql('i.bucket, i.upload_id, k.f, i.started', KEYS_JOIN, '3'),
            values: [tenant, intArray(keys.map(([b]) => b)), textArray(keys.map(([, o]) => o)), intArray(keys.map(([, , f]) => f))],
            rowMode: 'array',
          });
          for (const [bucket, uploadId, f, started] of uploads.rows) if (Number(started) < Number(f)) closure.uploadAt(`${bucket}\u0000${uploadId}`, Number(f));
        }
      }
      if (step.buckets.length > 0) {
        const { rows } = await c.query<[string]>({
          text: `SELECT DISTINCT l.seq FROM inventory_log l JOIN unnest($2::text[], $3::bigint[]) AS n(b, f) ON l.bucket = n.b AND l.ts >= n.f WHERE l.tenant = $1`,
          values: [tenant, textArray(await names(step.buckets.map(([b]) => b))), intArray(step.buckets.map(([, f]) => f))],
          rowMode: 'array',
        });
        for (const [seq] of rows) seqs.add(seq);
      }
      if (step.uploads.length > 0) {
        const pairs = step.uploads.map(([u, at]) => [...splitKey(u), at] as const);
        const keys = await c.query<[number, string, string, string]>({
          text: `SELECT i.bucket, i.upload_id, i.object_key, k.t FROM inventory i JOIN unnest($2::integer[], $3::text[], $4::bigint[]) AS k(b, u, t) ON i.bucket = k.b AND i.upload_id = k.u
            WHERE i.tenant = $1 AND i.kind = 3 AND i.started <= k.t`,
          values: [tenant, intArray(pairs.map(([b]) => b)), textArray(pairs.map(([, u]) => u)), intArray(pairs.map(([, , t]) => t))],
          rowMode: 'array',
        });
        for (const [bucket, uploadId, key, at] of keys.rows) closure.uploadKey(`${bucket}\u0000${uploadId}`, key, Number(at));
      }
      const wanted = [...seqs].filter((seq) => !closure.events.has(Number(seq)));
      if (wanted.length > 0) {
        for (const [seq, e] of await this.#read(c, tenant, `${EVENTS_SQL} AND seq = ANY($2::bigint[])`, [intArray(wanted)])) closure.add(seq, e, false);
      }
    }
  }

  /** As SQLite's (sqlite/inventory.ts #recompute): what the closure gathered, each node replayed from its time. */
  async #recompute(c: PoolClient, tenant: number, closure: Closure): Promise<void> {
    const q = async (text: string, values: unknown[]) => (await c.query<EntryRow>({ text, values, rowMode: 'array' })).rows;
    const of = (kind: string) => {
      const b: number[] = [];
      const m: string[] = [];
      const f: number[] = [];
      for (const [n, from] of closure.from) {
        if (n[0] !== kind) continue;
        const [bucket, name] = splitKey(n.slice(1));
        if (bucket.startsWith('?')) continue;
        b.push(Number(bucket));
        m.push(name);
        f.push(from);
      }
      return [b, m, f] as const;
    };
    const cols = ENTRY_COLUMNS.split(', ').map((col) => `i.${col}`).join(', ');
    const relevant = 'AND (i.started >= k.f OR i.ended IS NULL OR i.ended >= k.f)';
    const found = new Map<string, EntryRow>();
    const add = (list: EntryRow[]) => {
      for (const row of list) found.set(String(row[0]), row);
    };
    const [kb, kk, kf] = of('k');
    if (kb.length > 0) {
      add(await q(aliveAtSql(cols, KEYS_JOIN, '0, 1'), [tenant, intArray(kb), textArray(kk), intArray(kf)]));
    }
    const [ub, uu, uf] = of('u');
    if (ub.length > 0) {
      add(await q(`SELECT ${cols} FROM inventory i JOIN unnest($2::integer[], $3::text[], $4::bigint[]) AS k(b, u, f) ON i.bucket = k.b AND i.upload_id = k.u
        WHERE i.tenant = $1 AND i.upload_id IS NOT NULL AND i.kind IN (2, 3) ${relevant}`, [tenant, intArray(ub), textArray(uu), intArray(uf)]));
    }
    if (closure.buckets.size > 0) {
      const buckets = [...closure.buckets];
      add(await q(`SELECT ${cols} FROM inventory i JOIN unnest($2::integer[], $3::bigint[]) AS k(b, f) ON i.bucket = k.b WHERE i.tenant = $1 ${relevant}`, [
        tenant,
        intArray(buckets.map(([b]) => b)),
        intArray(buckets.map(([, f]) => f)),
      ]));
    }
    await this.#write(c, tenant, redo([...found.values()].map(entryOf), [...closure.events.values()], closure));
  }

  async #write(c: PoolClient, tenant: number, change: ReturnType<typeof redo>): Promise<void> {
    const { removed, ended, made, deltas } = change;
    if (removed.length > 0) await c.query('DELETE FROM inventory WHERE id = ANY($1::bigint[])', [intArray(removed)]);
    if (ended.length > 0) {
      await c.query('UPDATE inventory i SET ended = u.e, ended_by = u.b FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS u(id, e, b) WHERE i.id = u.id', [
        intArray(ended.map((e) => e.id!)),
        intArray(ended.map((e) => e.end)),
        textArray(ended.map((e) => e.endedBy)),
      ]);
    }
    if (made.length > 0) {
      const col = <T>(f: (e: Entry) => T) => made.map(f);
      await c.query(
        `INSERT INTO inventory (kind, bucket, object_key, version_id, upload_id, part_number, size, started, created_by, action, provider, customer, feature, client_type, client_id, ended, ended_by)
         SELECT * FROM unnest($1::smallint[], $2::integer[], $3::text[], $4::text[], $5::text[], $6::integer[], $7::bigint[], $8::bigint[], $9::text[], $10::smallint[],
           $11::integer[], $12::integer[], $13::integer[], $14::integer[], $15::integer[], $16::bigint[], $17::text[])`.replace('INSERT INTO inventory (', `INSERT INTO inventory (tenant, `).replace('SELECT * FROM', `SELECT ${tenant}, * FROM`),
        [
          intArray(col((e) => KIND_CODE[e.kind])),
          intArray(col((e) => e.bucket)),
          textArray(col((e) => e.objectKey)),
          textArray(col((e) => e.versionId)),
          textArray(col((e) => e.uploadId)),
          intArray(col((e) => e.partNumber)),
          intArray(col((e) => e.size)),
          intArray(col((e) => e.start)),
          textArray(col((e) => e.createdBy)),
          intArray(col((e) => KINDS[e.action].code)),
          intArray(col((e) => e.attribution.provider)),
          intArray(col((e) => e.attribution.customer)),
          intArray(col((e) => e.attribution.feature)),
          intArray(col((e) => e.attribution.clientType)),
          intArray(col((e) => e.attribution.clientId)),
          intArray(col((e) => e.end)),
          textArray(col((e) => e.endedBy)),
        ],
      );
    }
    const written: ShapeRow[] = [...deltas.rows.values()].filter((r) => r.values.some((v) => v !== 0n)).map((r) => ({ time: r.hour / 3600, ids: dimensionIds(r), values: r.values }));
    await this.#upsert(c, tenant, FINE_SHAPE, written);
    // The coarse shapes' sums of the rows written: one row per coarse key.
    for (const shape of COARSE_SHAPES) await this.#upsert(c, tenant, shape, [...project(shape, written).values()]);
  }

  /** Adds rows to a shape's table (their values wide: store/wide.ts). */
  async #upsert(c: PoolClient, tenant: number, shape: StorageShape, rows: ShapeRow[]): Promise<void> {
    if (rows.length === 0) return;
    const columns = dimensionColumns(shape);
    const values = storedValueColumns(shape);
    const wide = wideValuePositions(shape);
    const stored = rows.map((r) => toStored(r.values, wide));
    const arrays = [...columns.map(() => 'integer'), ...values.map(() => 'bigint')].map((type, i) => `$${i + 3}::${type}[]`);
    const key = `tenant, ${shape.grain}, ${columns.join(', ')}`;
    await c.query(
      `INSERT INTO ${shape.table} (${key}, ${values.join(', ')})
       SELECT $1, * FROM unnest($2::integer[], ${arrays.join(', ')})
       ON CONFLICT (${key}) DO UPDATE SET ${addSetSql(valueColumns(shape), WIDE_VALUE_COLUMNS, `${shape.table}.`)}`,
      [tenant, intArray(rows.map((r) => r.time)), ...columns.map((_, i) => intArray(rows.map((r) => r.ids[i]!))), ...values.map((_, i) => intArray(stored.map((v) => v[i]!)))],
    );
  }

  /** Dictionary ids of plain values (undefined where absent). */
  async #ids(values: string[], c?: PoolClient): Promise<(number | undefined)[]> {
    const encoded = values.map(toPgText);
    const run = () => (c ?? this.pool).query<{ id: number; value: string }>('SELECT id, value FROM dict WHERE value = ANY($1::text[])', [encoded]);
    const { rows } = c === undefined ? await this.guarded(run) : await run();
    const byValue = new Map(rows.map((r) => [r.value, r.id]));
    return encoded.map((v) => byValue.get(v));
  }

  async #texts(ids: number[]): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    const wanted = ids.filter((id) => id !== 0);
    if (wanted.length === 0) return out;
    const { rows } = await this.guarded(() => this.pool.query<{ id: number; value: string }>('SELECT id, value FROM dict WHERE id = ANY($1::integer[])', [wanted]));
    for (const r of rows) out.set(r.id, fromPgText(r.value));
    return out;
  }

  /** [provider, bucket, customer, feature, client_type, client_id, action] id rows → StorageKey maker. */
  async #keyMaker(rows: unknown[][]): Promise<(ids: unknown[]) => StorageKey> {
    const ids = new Set<number>();
    for (const r of rows) for (let i = 0; i < 6; i++) ids.add(Number(r[i]));
    const texts = await this.#texts([...ids]);
    const v = (id: unknown) => texts.get(Number(id)) ?? null;
    return (r) => ({ provider: v(r[0]), bucket: v(r[1]), customerId: v(r[2]), featureId: v(r[3]), clientType: v(r[4]), clientId: v(r[5]), action: actionOf(Number(r[6])) });
  }

  async #records(rows: EntryRow[]): Promise<InventoryEntryRecord[]> {
    const ids = new Set<number>();
    for (const r of rows) for (const i of [11, 12, 13, 14, 15]) ids.add(r[i] as number);
    const texts = await this.#texts([...ids]);
    const v = (id: number) => texts.get(id) ?? null;
    return rows.map((r) => ({
      id: Number(r[0]),
      objectKey: fromPgText(r[3]!),
      versionId: r[4] === null ? null : fromPgText(r[4]),
      deleteMarker: r[1] === KIND_CODE.marker,
      size: r[7] === null ? null : BigInt(r[7]),
      created: {
        at: Number(r[8]),
        eventId: r[9],
        action: actionOf(r[10]) as ActionName,
        provider: v(r[11]),
        customerId: v(r[12]),
        featureId: v(r[13]),
        clientType: v(r[14]),
        clientId: v(r[15]),
      },
      ended: r[16] === null ? null : { at: Number(r[16]), eventId: r[17]! },
    }));
  }

  async #filterIds(dimension: Dimension, values: string[]): Promise<number[]> {
    if (dimension === 'action') return values.filter((v): v is ActionName => Object.hasOwn(KINDS, v)).map((name) => KINDS[name].code);
    const ids: number[] = values.includes('') ? [0] : [];
    for (const id of await this.#ids(values.filter((v) => v !== ''))) if (id !== undefined) ids.push(id);
    return ids;
  }
}
