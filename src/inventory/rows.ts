/**
 * What both stores share about inventory rows: kind codes, the tie-rank SQL expression, the decoding
 * of an event's JSON rest into a TimelineEvent, and the stored-entry comparison of `verify`.
 */
import { KINDS, actionByCode } from '../events/catalogue.js';
import type { ActionName, CopySource, DeletedObject } from '../events/catalogue.js';
import type { InventoryDifference, InventoryEntryRecord, ObjectsStoreQuery } from '../store/types.js';
import { Deltas, ENTRY_KINDS, INVENTORY_ACTIONS, replay } from './timeline.js';
import type { Attribution, Entry, EntryKind, TimelineEvent } from './timeline.js';

export const KIND_CODE: Record<EntryKind, number> = { version: 0, marker: 1, part: 2, upload: 3 };
export const kindOf = (code: number): EntryKind => ENTRY_KINDS[code]!;

export const INVENTORY_ACTION_CODES = INVENTORY_ACTIONS.map((a) => KINDS[a].code);

/** Completions after writes within a second (timeline.ts RANK), as SQL over an action code column. */
export function rankSql(column: string): string {
  return `CASE ${column} WHEN ${KINDS.CompleteMultipartUpload.code} THEN 3 WHEN ${KINDS.DeleteObject.code} THEN 5 WHEN ${KINDS.DeleteObjects.code} THEN 5 ELSE 2 END`;
}

/** The kind-specific fields the rules read from an event's JSON rest (row.ts encodeRest). */
export function restFields(rest: string | null): Pick<TimelineEvent, 'copySource' | 'hardDeletedVersionId' | 'resultingDeleteMarkerVersionId' | 'deletedObjects' | 'force'> {
  if (rest === null) return {};
  const r = JSON.parse(rest) as Record<string, unknown>;
  const out: ReturnType<typeof restFields> = {};
  if (r.copySource !== undefined) out.copySource = r.copySource as CopySource;
  if (typeof r.hardDeletedVersionId === 'string') out.hardDeletedVersionId = r.hardDeletedVersionId;
  if (typeof r.resultingDeleteMarkerVersionId === 'string') out.resultingDeleteMarkerVersionId = r.resultingDeleteMarkerVersionId;
  if (Array.isArray(r.deletedObjects)) out.deletedObjects = r.deletedObjects as DeletedObject[];
  if (r.force === true) out.force = true;
  return out;
}

export const actionOf = (code: number): ActionName => actionByCode(code)!;

export const attribution = (provider: number, customer: number, feature: number, clientType: number, clientId: number): Attribution => ({
  provider,
  customer,
  feature,
  clientType,
  clientId,
});

const entryText = (e: Entry) =>
  JSON.stringify([e.kind, e.bucket, e.objectKey, e.versionId, e.uploadId, e.partNumber, e.size?.toString() ?? null, e.start, e.createdBy, e.action, e.attribution, e.end, e.endedBy]);

/** The stored entries and deltas of a tenant against those replayed from all its events. */
export function compareInventory(
  tenantId: number,
  events: TimelineEvent[],
  stored: Entry[],
  storedDeltas: Map<string, bigint[]>,
): InventoryDifference[] {
  const { made } = replay([], events);
  const out: InventoryDifference[] = [];
  const want = new Map<string, number>();
  for (const e of made) want.set(entryText(e), (want.get(entryText(e)) ?? 0) + 1);
  for (const e of stored) {
    const t = entryText(e);
    const n = want.get(t);
    if (n === undefined) out.push({ tenantId, check: 'entry', expected: 'absent', actual: t });
    else if (n === 1) want.delete(t);
    else want.set(t, n - 1);
  }
  for (const t of want.keys()) out.push({ tenantId, check: 'entry', expected: t, actual: 'absent' });
  const deltas = new Deltas();
  for (const e of made) deltas.entry(e, 1n);
  const keys = new Set([...deltas.rows.keys(), ...storedDeltas.keys()]);
  for (const key of keys) {
    const expected = deltas.rows.get(key)?.values ?? [0n, 0n, 0n, 0n, 0n, 0n];
    const actual = storedDeltas.get(key) ?? [0n, 0n, 0n, 0n, 0n, 0n];
    if (expected.some((v, i) => v !== actual[i])) out.push({ tenantId, check: `hour delta ${key}`, expected: expected.join(','), actual: actual.join(',') });
  }
  return out;
}

/** An inventory row as both stores read it: [id, kind code, bucket, objectKey, ...]. */
type EntryLike = readonly [number, number, unknown, string | null, ...unknown[]];

/**
 * Walks rows in (objectKey, newest first) order: every entry with includeVersions, else each key's
 * first (its current version, skipped when a delete marker). Stops after `limit` entries, so a read
 * costs the page, not the bucket.
 */
export function pickEntries<R extends EntryLike>(rows: Iterable<R>, q: ObjectsStoreQuery, record: (row: R) => InventoryEntryRecord): InventoryEntryRecord[] {
  const out: InventoryEntryRecord[] = [];
  let key: string | null = null;
  let skipping = q.after !== undefined;
  for (const row of rows) {
    const objectKey = row[3]!;
    if (skipping) {
      if (objectKey === q.after!.objectKey) {
        if (!q.includeVersions || row[0] === q.after!.id) key = objectKey;
        // Skip the cursor's key up to and including its entry.
        if (!q.includeVersions || row[0] === q.after!.id) skipping = false;
        continue;
      }
      skipping = false;
    }
    if (!q.includeVersions) {
      if (objectKey === key) continue;
      key = objectKey;
      if (row[1] === KIND_CODE.marker) continue;
    }
    out.push(record(row));
    if (out.length >= q.limit) break;
  }
  return out;
}

