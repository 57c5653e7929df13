/**
 * The inventory rules (README "Stored bytes"), as pure code shared by both stores and their rebuild:
 * events replayed in timeline order over the entries alive before the first of them. An entry is an
 * object version, a delete marker, an upload part, or an upload (the CreateMultipartUpload record
 * that names the key of its completion; it holds no bytes). Stores keep the entries, recompute from
 * the earliest timestamp a transaction touched, and turn entries into per-hour deltas (deltaOf).
 */
import type { ActionName, CopySource, DeletedObject } from '../events/catalogue.js';

export type EntryKind = 'version' | 'marker' | 'part' | 'upload';
export const ENTRY_KINDS: readonly EntryKind[] = ['version', 'marker', 'part', 'upload'];

/** Who created an entry: the creating event's dimensions, as the store encodes them (dictionary ids, 0 for none). */
export interface Attribution {
  provider: number;
  customer: number;
  feature: number;
  clientType: number;
  clientId: number;
}

/** An event as the rules read it; `bucket` and copy sources' buckets in the store's encoding. */
export interface TimelineEvent {
  ts: number;
  action: ActionName;
  eventId: string;
  bucket: string;
  attribution: Attribution;
  objectKey?: string;
  versionId?: string;
  uploadId?: string;
  partNumber?: number;
  bytes?: number;
  copySource?: CopySource;
  hardDeletedVersionId?: string;
  resultingDeleteMarkerVersionId?: string;
  deletedObjects?: DeletedObject[];
  force?: boolean;
}

export interface Entry {
  /** The store's row id; undefined for an entry made by this replay. */
  id?: number;
  kind: EntryKind;
  bucket: string;
  /** null only for a part or completion whose upload's key is unknown. */
  objectKey: string | null;
  versionId: string | null;
  uploadId: string | null;
  partNumber: number | null;
  /** null when unknown (counted apart, never as 0). */
  size: bigint | null;
  start: number;
  createdBy: string;
  action: ActionName;
  attribution: Attribution;
  end: number | null;
  endedBy: string | null;
}

/**
 * Ties within a second: uploads begin, then parts, then objects are written, then uploads complete
 * or abort, then deletes, then bucket deletes; then by eventId (code point order). So a PutObject and
 * a DeleteObject of the same key in the same second leave the key deleted.
 */
const RANK: Partial<Record<ActionName, number>> = {
  CreateMultipartUpload: 0,
  UploadPart: 1,
  UploadPartCopy: 1,
  PutObject: 2,
  PostObject: 2,
  CopyObject: 2,
  CompleteMultipartUpload: 3,
  AbortMultipartUpload: 4,
  DeleteObject: 5,
  DeleteObjects: 5,
  DeleteBucket: 6,
};

/** The kinds the inventory reads; every other kind leaves it as it is. */
export const INVENTORY_ACTIONS = Object.keys(RANK) as ActionName[];

export function compareEvents(a: TimelineEvent, b: TimelineEvent): number {
  if (a.ts !== b.ts) return a.ts - b.ts;
  const r = RANK[a.action]! - RANK[b.action]!;
  if (r !== 0) return r;
  return a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0;
}

/** Entries in the order of their creating events (what "the newest live version" means). */
export function compareEntries(a: Entry, b: Entry): number {
  if (a.start !== b.start) return a.start - b.start;
  const r = RANK[a.action]! - RANK[b.action]!;
  if (r !== 0) return r;
  return a.createdBy < b.createdBy ? -1 : a.createdBy > b.createdBy ? 1 : 0;
}

const k2 = (a: string, b: string) => `${a}\u0000${b}`;

/**
 * What a catch-up from `from` replays: the events at or after it that are connected to the new ones
 * (sharing a key, an upload, a copy source, a forced bucket delete), and the keys, uploads and
 * buckets they touch, whose entries alive before `from` it loads and whose later entries it redoes.
 * Everything else is left as stored: no event it replays can read or change it.
 */
export interface Scope {
  events: TimelineEvent[];
  /** bucket\0objectKey: versions and markers. */
  keys: Set<string>;
  /** bucket\0uploadId: parts and the upload record. */
  uploads: Set<string>;
  /** Buckets deleted with force: every entry in them. */
  buckets: Set<string>;
}

/** Each node an event touches: k (versions at a key), u (an upload), b (a bucket's forced deletes). */
function nodesOf(e: TimelineEvent, uploadKeys: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  if (e.objectKey !== undefined) out.push(`k${k2(e.bucket, e.objectKey)}`);
  if (e.uploadId !== undefined) {
    out.push(`u${k2(e.bucket, e.uploadId)}`);
    // A completion without a key writes at the key its CreateMultipartUpload named.
    const key = uploadKeys.get(k2(e.bucket, e.uploadId));
    if (key !== undefined && e.action === 'CompleteMultipartUpload' && e.objectKey === undefined) out.push(`k${k2(e.bucket, key)}`);
  }
  if (e.copySource !== undefined) out.push(`k${k2(e.copySource.bucket, e.copySource.objectKey)}`);
  for (const d of e.deletedObjects ?? []) out.push(`k${k2(e.bucket, d.objectKey)}`);
  if (e.action === 'DeleteBucket' && e.force === true) out.push(`b${e.bucket}`);
  return out;
}

/**
 * `uploadKeys`: bucket\0uploadId → key for uploads whose CreateMultipartUpload is before `from`
 * (their stored upload record), so that their completion joins that key.
 */
export function scope(events: readonly TimelineEvent[], isNew: (e: TimelineEvent) => boolean, uploadKeys: ReadonlyMap<string, string>): Scope {
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    let root = x;
    while (parent.get(root) !== undefined && parent.get(root) !== root) root = parent.get(root)!;
    let y = x;
    while (y !== root) {
      const next = parent.get(y)!;
      parent.set(y, root);
      y = next;
    }
    return root;
  };
  const union = (a: string, b: string) => {
    const ra = find(a);
    const rb = find(b);
    if (ra !== rb) parent.set(ra, rb);
  };
  const nodes = events.map((e) => nodesOf(e, uploadKeys));
  const forced = new Set<string>();
  for (const list of nodes) {
    for (const n of list) {
      if (!parent.has(n)) parent.set(n, n);
      if (n[0] === 'b') forced.add(n.slice(1));
    }
    for (let i = 1; i < list.length; i++) union(list[0]!, list[i]!);
  }
  // A forced bucket delete ends everything in its bucket: every node of the bucket joins it.
  for (const n of [...parent.keys()]) {
    const bucket = n[0] === 'b' ? n.slice(1) : n.slice(1, n.indexOf('\u0000'));
    if (forced.has(bucket)) union(n, `b${bucket}`);
  }
  const affected = new Set<string>();
  events.forEach((e, i) => {
    if (isNew(e)) for (const n of nodes[i]!) affected.add(find(n));
  });
  const out: Scope = { events: [], keys: new Set(), uploads: new Set(), buckets: new Set() };
  events.forEach((e, i) => {
    const first = nodes[i]![0];
    if (first !== undefined && affected.has(find(first))) out.events.push(e);
  });
  for (const n of parent.keys()) {
    if (!affected.has(find(n))) continue;
    if (n[0] === 'k') out.keys.add(n.slice(1));
    else if (n[0] === 'u') out.uploads.add(n.slice(1));
    else out.buckets.add(n.slice(1));
  }
  return out;
}

/** The uploads completed without a key among `events` whose CreateMultipartUpload is not among them (bucket\0uploadId). */
export function keylessCompletions(events: readonly TimelineEvent[]): Set<string> {
  const out = new Set<string>();
  for (const e of events) if (e.action === 'CompleteMultipartUpload' && e.objectKey === undefined && e.uploadId !== undefined) out.add(k2(e.bucket, e.uploadId));
  return out;
}

export const splitKey = (key: string): [string, string] => {
  const i = key.indexOf('\u0000');
  return [key.slice(0, i), key.slice(i + 1)];
};

/**
 * Replays `events` (any order; sorted here) over `alive`, the entries alive just before the first of
 * them (at least those scope() names). Entries in `alive` that the replay ends get their end set;
 * returns the entries made by the replay.
 */
export function replay(alive: Entry[], events: TimelineEvent[]): { made: Entry[] } {
  const state = new Timeline(alive);
  events.sort(compareEvents);
  for (const e of events) state.apply(e);
  return { made: state.made };
}

class Timeline {
  /** Live versions and markers per bucket\0objectKey, oldest first. */
  readonly #atKey = new Map<string, Entry[]>();
  /** Live parts per bucket\0uploadId. */
  readonly #parts = new Map<string, Map<number, Entry>>();
  /** Live upload records per bucket\0uploadId. */
  readonly #uploads = new Map<string, Entry>();
  readonly #byBucket = new Map<string, Set<Entry>>();
  readonly made: Entry[] = [];

  constructor(alive: Entry[]) {
    for (const e of [...alive].sort(compareEntries)) this.#add(e);
  }

  apply(e: TimelineEvent): void {
    switch (e.action) {
      case 'PutObject':
      case 'PostObject':
        if (e.objectKey !== undefined) this.#write(e, e.objectKey, e.bytes === undefined ? null : BigInt(e.bytes));
        break;
      case 'CopyObject':
        if (e.objectKey !== undefined) this.#write(e, e.objectKey, this.#sourceSize(e.copySource));
        break;
      case 'CreateMultipartUpload':
        if (e.uploadId !== undefined && e.objectKey !== undefined) {
          const old = this.#uploads.get(k2(e.bucket, e.uploadId));
          if (old !== undefined) this.#end(old, e);
          this.#create(e, 'upload', e.objectKey, null, null);
        }
        break;
      case 'UploadPart':
      case 'UploadPartCopy': {
        if (e.uploadId === undefined || e.partNumber === undefined) break;
        const size = e.bytes !== undefined ? BigInt(e.bytes) : e.action === 'UploadPartCopy' ? this.#sourceSize(e.copySource) : null;
        const old = this.#parts.get(k2(e.bucket, e.uploadId))?.get(e.partNumber);
        if (old !== undefined) this.#end(old, e);
        const upload = this.#uploads.get(k2(e.bucket, e.uploadId));
        this.#create(e, 'part', e.objectKey ?? upload?.objectKey ?? null, null, size);
        break;
      }
      case 'CompleteMultipartUpload': {
        if (e.uploadId === undefined) break;
        const id = k2(e.bucket, e.uploadId);
        const parts = [...(this.#parts.get(id)?.values() ?? [])];
        let size: bigint | null = parts.length === 0 ? null : 0n;
        for (const p of parts) size = size === null || p.size === null ? null : size + p.size;
        for (const p of parts) this.#end(p, e);
        const upload = this.#uploads.get(id);
        if (upload !== undefined) this.#end(upload, e);
        const key = e.objectKey ?? upload?.objectKey ?? null;
        if (key !== null) this.#write(e, key, size);
        break;
      }
      case 'AbortMultipartUpload': {
        if (e.uploadId === undefined) break;
        const id = k2(e.bucket, e.uploadId);
        for (const p of [...(this.#parts.get(id)?.values() ?? [])]) this.#end(p, e);
        const upload = this.#uploads.get(id);
        if (upload !== undefined) this.#end(upload, e);
        break;
      }
      case 'DeleteObject':
        if (e.objectKey !== undefined) this.#delete(e, e.objectKey, e.hardDeletedVersionId, e.resultingDeleteMarkerVersionId);
        break;
      case 'DeleteObjects':
        for (const d of e.deletedObjects ?? []) this.#delete(e, d.objectKey, d.hardDeletedVersionId, d.resultingDeleteMarkerVersionId);
        break;
      case 'DeleteBucket':
        if (e.force === true) for (const entry of [...(this.#byBucket.get(e.bucket) ?? [])]) this.#end(entry, e);
        break;
      default:
        break;
    }
  }

  /** A new version at the key; it ends the live entries with the same version id (null: the unversioned object). */
  #write(e: TimelineEvent, key: string, size: bigint | null): void {
    const versionId = e.versionId ?? null;
    for (const same of (this.#atKey.get(k2(e.bucket, key)) ?? []).filter((x) => x.versionId === versionId)) this.#end(same, e);
    this.#create(e, 'version', key, versionId, size);
  }

  #delete(e: TimelineEvent, key: string, hard: string | undefined, marker: string | undefined): void {
    const live = this.#atKey.get(k2(e.bucket, key)) ?? [];
    // Every live entry with the id (a version and a marker may share one).
    if (hard !== undefined) for (const target of live.filter((x) => x.versionId === hard)) this.#end(target, e);
    if (marker !== undefined) this.#create(e, 'marker', key, marker, null);
    if (hard === undefined && marker === undefined) for (const target of live.filter((x) => x.versionId === null)) this.#end(target, e);
  }

  /** The named source version's size, or the source key's current version's (the newest live entry, unless a marker); else unknown. */
  #sourceSize(source: CopySource | undefined): bigint | null {
    if (source === undefined) return null;
    const live = this.#atKey.get(k2(source.bucket, source.objectKey)) ?? [];
    const entry = source.versionId !== undefined ? live.find((x) => x.versionId === source.versionId) : live[live.length - 1];
    return entry === undefined || entry.kind !== 'version' ? null : entry.size;
  }

  #create(e: TimelineEvent, kind: EntryKind, key: string | null, versionId: string | null, size: bigint | null): void {
    const entry: Entry = {
      kind,
      bucket: e.bucket,
      objectKey: key,
      versionId,
      uploadId: kind === 'part' || kind === 'upload' ? e.uploadId! : null,
      partNumber: kind === 'part' ? e.partNumber! : null,
      size,
      start: e.ts,
      createdBy: e.eventId,
      action: e.action,
      attribution: e.attribution,
      end: null,
      endedBy: null,
    };
    this.made.push(entry);
    this.#add(entry);
  }

  #add(entry: Entry): void {
    if (entry.kind === 'version' || entry.kind === 'marker') {
      const id = k2(entry.bucket, entry.objectKey!);
      let list = this.#atKey.get(id);
      if (list === undefined) {
      list = [];
      this.#atKey.set(id, list);
    }
      list.push(entry);
    } else if (entry.kind === 'part') {
      const id = k2(entry.bucket, entry.uploadId!);
      let parts = this.#parts.get(id);
      if (parts === undefined) {
      parts = new Map();
      this.#parts.set(id, parts);
    }
      parts.set(entry.partNumber!, entry);
    } else {
      this.#uploads.set(k2(entry.bucket, entry.uploadId!), entry);
    }
    let all = this.#byBucket.get(entry.bucket);
    if (all === undefined) {
      all = new Set();
      this.#byBucket.set(entry.bucket, all);
    }
    all.add(entry);
  }

  #end(entry: Entry, e: TimelineEvent): void {
    entry.end = e.ts;
    entry.endedBy = e.eventId;
    this.#byBucket.get(entry.bucket)?.delete(entry);
    if (entry.kind === 'version' || entry.kind === 'marker') {
      const list = this.#atKey.get(k2(entry.bucket, entry.objectKey!))!;
      list.splice(list.indexOf(entry), 1);
    } else if (entry.kind === 'part') {
      this.#parts.get(k2(entry.bucket, entry.uploadId!))!.delete(entry.partNumber!);
    } else {
      this.#uploads.delete(k2(entry.bucket, entry.uploadId!));
    }
  }
}

/**
 * One catch-up's change, from the stored entries the scope holds (`found`) and the scope's events:
 * entries made at or after `from` go (their events are replayed), those alive before it are replayed
 * over (reopened first when they ended at or after it). Returns what to write: the ids to delete,
 * the stored entries whose end changed, the entries made, and the deltas of all of it.
 */
export function redo(found: Entry[], events: TimelineEvent[], from: number): { removed: number[]; ended: Entry[]; made: Entry[]; deltas: Deltas } {
  const deltas = new Deltas();
  const alive: Entry[] = [];
  const before = new Map<Entry, [number | null, string | null]>();
  const removed: number[] = [];
  for (const entry of found) {
    if (entry.start >= from) {
      deltas.entry(entry, -1n);
      removed.push(entry.id!);
      continue;
    }
    before.set(entry, [entry.end, entry.endedBy]);
    if (entry.end !== null) {
      deltas.add(entry, entry.end, 1n);
      entry.end = null;
      entry.endedBy = null;
    }
    alive.push(entry);
  }
  const { made } = replay(alive, events);
  const ended = alive.filter((entry) => {
    if (entry.end !== null) deltas.add(entry, entry.end, -1n);
    const [end, endedBy] = before.get(entry)!;
    return entry.end !== end || entry.endedBy !== endedBy;
  });
  for (const e of made) deltas.entry(e, 1n);
  return { removed, ended, made, deltas };
}

/** The per-hour measures of live storage, kept as deltas: what changes where an entry starts or ends. */
export const DELTA_MEASURES = ['bytes', 'tail', 'objects', 'markers', 'unknown', 'partBytes'] as const;

/** One entry's change at time t (sign +1 at its start, −1 at its end), in DELTA_MEASURES order; null for an upload record. */
export function deltaOf(entry: Entry, t: number, sign: 1n | -1n): bigint[] | null {
  if (entry.kind === 'upload') return null;
  const size = entry.size ?? 0n;
  const hourEnd = Math.floor(t / 3600) * 3600 + 3600;
  return [
    sign * size,
    sign * size * BigInt(hourEnd - t),
    entry.kind === 'version' ? sign : 0n,
    entry.kind === 'marker' ? sign : 0n,
    entry.kind === 'version' && entry.size === null ? sign : 0n,
    entry.kind === 'part' ? sign * size : 0n,
  ];
}

export const deltaKey = (hour: number, bucket: string, action: ActionName, a: Attribution): string =>
  `${hour}/${bucket}/${action}/${a.provider}/${a.customer}/${a.feature}/${a.clientType}/${a.clientId}`;

/** Per-hour delta rows keyed by hour start and attribution, summed in memory: one upsert per key per catch-up. */
export class Deltas {
  readonly rows = new Map<string, { hour: number; bucket: string; action: ActionName; attribution: Attribution; values: bigint[] }>();

  add(entry: Entry, t: number, sign: 1n | -1n): void {
    const d = deltaOf(entry, t, sign);
    if (d === null) return;
    const hour = Math.floor(t / 3600) * 3600;
    const a = entry.attribution;
    const key = deltaKey(hour, entry.bucket, entry.action, a);
    let row = this.rows.get(key);
    if (row === undefined) {
      row = { hour, bucket: entry.bucket, action: entry.action, attribution: a, values: [0n, 0n, 0n, 0n, 0n, 0n] };
      this.rows.set(key, row);
    }
    for (let i = 0; i < d.length; i++) row.values[i]! += d[i]!;
  }

  /** Adds (sign +1) or removes (−1) everything an entry contributes. */
  entry(entry: Entry, sign: 1n | -1n): void {
    this.add(entry, entry.start, sign);
    if (entry.end !== null) this.add(entry, entry.end, sign === 1n ? -1n : 1n);
  }
}
