/**
 * The inventory rules (README "Stored bytes"), as pure code shared by both stores and their rebuild:
 * events replayed in timeline order over the entries alive before the first of them. An entry is an
 * object version, a delete marker, an upload part, or an upload (the CreateMultipartUpload record
 * that names the key of its completion; it holds no bytes). Stores keep the entries, recompute from
 * the earliest time each of a transaction's events can change (Closure), and turn entries into per-hour
 * deltas (deltaOf).
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
 * Kinds whose key only labels the part they make or the upload they end: they neither read nor change
 * the versions at it, so they are not among the key's events. (A CreateMultipartUpload is: a replay of
 * its upload from before it must reach the key its completion may write without naming it. An
 * UploadPartCopy names no key of its own, only its source, which it reads.)
 */
const NAMES_KEY_ONLY: ReadonlySet<ActionName> = new Set(['UploadPart', 'AbortMultipartUpload']);

/**
 * The nodes an event touches by its own fields: k (versions at a key), u (an upload), b (a bucket's
 * forced deletes). What the per-key inventory log stores for each event (Closure reads it).
 */
export function touches(e: TimelineEvent): string[] {
  const out: string[] = [];
  if (e.objectKey !== undefined && !NAMES_KEY_ONLY.has(e.action)) out.push(`k${k2(e.bucket, e.objectKey)}`);
  if (e.uploadId !== undefined) out.push(`u${k2(e.bucket, e.uploadId)}`);
  if (e.copySource !== undefined) out.push(`k${k2(e.copySource.bucket, e.copySource.objectKey)}`);
  for (const d of e.deletedObjects ?? []) out.push(`k${k2(e.bucket, d.objectKey)}`);
  if (e.action === 'DeleteBucket' && e.force === true) out.push(`b${e.bucket}`);
  return out;
}

const isKeyless = (e: TimelineEvent) => e.action === 'CompleteMultipartUpload' && e.objectKey === undefined && e.uploadId !== undefined;

/** A node's bucket (as the events encode it). */
export const nodeBucket = (node: string): string => (node[0] === 'b' ? node.slice(1) : node.slice(1, node.indexOf('\u0000')));

/**
 * What a catch-up replays, and from when, found through the per-key inventory log (each event's
 * touches(), by timestamp): each node (key, upload) is replayed from the earliest event that can
 * change it, not the tenant from the earliest pending one. Starting from the new events:
 * - an event at t reaches each node it touches from t: its events from t are read, and they reach
 *   theirs (a copy at t reaches its source and destination from t; a late change to the source
 *   changes the copy, whose destination then changes from t; and so on until closed); except a
 *   DeleteObjects read through one of its keys (add);
 * - a node reaches its bucket's forced deletes from the same time, and a forced delete at t reaches
 *   every entry and event of its bucket from t (`buckets`);
 * - a completion without a key reaches, from its time, the key its stored upload record names, and a
 *   key reaches the uploads whose stored record names it (their completion may have no key of its own).
 * Every event touching a node at or after its time is then among `events`, and every event among them
 * touches only nodes reached no later than it: replaying them over the entries alive just before each
 * one's time (fromOf) equals replaying everything. The store drives it: add() what it read, then read
 * what next() asks, until next() is null.
 */
export class Closure {
  /** The events gathered, by the store's event id (seq). */
  readonly events = new Map<number, TimelineEvent>();
  /** Each node reached (k, u, b) → the time it is replayed from. */
  readonly from = new Map<string, number>();
  /** Each bucket a forced delete reached → the time every entry of it is replayed from. */
  readonly buckets = new Map<string, number>();
  #nodes = new Map<string, number>();
  #buckets = new Map<string, number>();
  #uploads: [string, number][] = [];

  /**
   * An event read (`fresh`: one of the new ones). A DeleteObjects read through one of its keys acts on
   * each other key as it did (it reads nothing another could change): it reaches none of them, and the
   * replay keeps only what it does at the keys reached (redo).
   */
  add(seq: number, e: TimelineEvent, fresh: boolean): void {
    if (this.events.has(seq)) return;
    this.events.set(seq, e);
    for (const n of touches(e)) {
      if (!fresh && e.action === 'DeleteObjects' && n[0] === 'k') continue;
      this.#reach(n, e.ts);
      if (n[0] === 'b') this.#lower(this.buckets, this.#buckets, e.bucket, e.ts);
    }
    if (isKeyless(e)) this.#uploads.push([k2(e.bucket, e.uploadId!), e.ts]);
  }

  /** The key a stored upload record (bucket\0uploadId) names, for its completion without one at `at`. */
  uploadKey(upload: string, key: string, at: number): void {
    this.#reach(`k${k2(splitKey(upload)[0], key)}`, at);
  }

  /** A stored upload record (bucket\0uploadId) naming a key node next() gave from `at`. */
  uploadAt(upload: string, at: number): void {
    this.#reach(`u${upload}`, at);
  }

  /**
   * What to read next, null when closed: for each [node, t] of `nodes`, the events touching it at or
   * after t, and for a key node the stored upload records naming it (created before t, alive at t;
   * uploadAt); for each [bucket, t] of `buckets`, every event touching anything in it at or after t;
   * for each [bucket\0uploadId, t] of `uploads`, the keys its stored upload records name (uploadKey).
   */
  next(): { nodes: [string, number][]; buckets: [string, number][]; uploads: [string, number][] } | null {
    if (this.#nodes.size + this.#buckets.size + this.#uploads.length === 0) return null;
    const out = { nodes: [...this.#nodes], buckets: [...this.#buckets], uploads: this.#uploads };
    this.#nodes = new Map();
    this.#buckets = new Map();
    this.#uploads = [];
    return out;
  }

  /** The time an entry is replayed from: its key's or upload's, or its bucket's if a forced delete reached it earlier. */
  fromOf(entry: Entry): number {
    if (entry.kind === 'version' || entry.kind === 'marker') return this.keyFrom(entry.bucket, entry.objectKey!);
    return Math.min(this.from.get(`u${k2(entry.bucket, entry.uploadId!)}`) ?? Number.POSITIVE_INFINITY, this.buckets.get(entry.bucket) ?? Number.POSITIVE_INFINITY);
  }

  /** The time a key's versions and markers are replayed from (Infinity: not reached). */
  keyFrom(bucket: string, objectKey: string): number {
    return Math.min(this.from.get(`k${k2(bucket, objectKey)}`) ?? Number.POSITIVE_INFINITY, this.buckets.get(bucket) ?? Number.POSITIVE_INFINITY);
  }

  #reach(n: string, t: number): void {
    if (!this.#lower(this.from, this.#nodes, n, t)) return;
    if (n[0] !== 'b') this.#reach(`b${nodeBucket(n)}`, t);
  }

  /** Sets `what` to t in `all` (and asks for it) when t is earlier than what it holds. */
  #lower(all: Map<string, number>, asked: Map<string, number>, what: string, t: number): boolean {
    const was = all.get(what);
    if (was !== undefined && was <= t) return false;
    all.set(what, t);
    asked.set(what, t);
    return true;
  }
}

export const splitKey = (key: string): [string, string] => {
  const i = key.indexOf('\u0000');
  return [key.slice(0, i), key.slice(i + 1)];
};

/** When each part of the history is replayed from (Closure); a whole replay starts before everything. */
export interface ReplayFrom {
  fromOf(entry: Entry): number;
  keyFrom(bucket: string, objectKey: string): number;
}

export const FROM_THE_START: ReplayFrom = { fromOf: () => Number.NEGATIVE_INFINITY, keyFrom: () => Number.NEGATIVE_INFINITY };

/**
 * Replays `events` (any order; sorted here) over `alive`, the entries alive just before the first of
 * them (at least those scope() names). Entries in `alive` that the replay ends get their end set;
 * returns the entries made by the replay. A DeleteObjects acts only on its keys replayed from no
 * later than it (`from`): at the others its effect is already in what is stored (Closure.add).
 */
export function replay(alive: Entry[], events: TimelineEvent[], from: ReplayFrom = FROM_THE_START): { made: Entry[] } {
  const state = new Timeline(alive, from);
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

  constructor(
    alive: Entry[],
    private readonly from: ReplayFrom,
  ) {
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
        for (const d of e.deletedObjects ?? []) {
          if (this.from.keyFrom(e.bucket, d.objectKey) <= e.ts) this.#delete(e, d.objectKey, d.hardDeletedVersionId, d.resultingDeleteMarkerVersionId);
        }
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
 * One catch-up's change, from the stored entries it loaded (`found`) and its events: entries made at
 * or after their time (fromOf: their node's, Closure) go (their events are replayed), those alive
 * before it are replayed over (reopened first when they ended at or after it). Returns what to write:
 * the ids to delete, the stored entries whose end changed, the entries made, and the deltas of all of it
 * (an entry made again as stored is kept, not deleted and made).
 */
export function redo(found: Entry[], events: TimelineEvent[], from: ReplayFrom): { removed: number[]; ended: Entry[]; made: Entry[]; deltas: Deltas } {
  const deltas = new Deltas();
  const alive: Entry[] = [];
  const before = new Map<Entry, [number | null, string | null]>();
  // The stored entries the replay makes again, by creating event (an event makes few entries).
  const redone = new Map<string, Entry[]>();
  for (const entry of found) {
    if (entry.start >= from.fromOf(entry)) {
      const same = redone.get(entry.createdBy);
      if (same === undefined) redone.set(entry.createdBy, [entry]);
      else same.push(entry);
      continue;
    }
    before.set(entry, [entry.end, entry.endedBy]);
    entry.end = null;
    entry.endedBy = null;
    alive.push(entry);
  }
  // What the replay makes where nothing was reached (a DeleteObjects' other keys) is as stored.
  const all = replay(alive, events, from).made.filter((entry) => from.fromOf(entry) <= entry.start);
  // Deltas only where something changed: most of a replay redoes what is stored, and an entry
  // reopened and ended again where it was moves nothing (the gather is ~5× the new events).
  const ended = alive.filter((entry) => {
    const [end, endedBy] = before.get(entry)!;
    if (entry.end === end && entry.endedBy === endedBy) return false;
    moveEnd(deltas, entry, end, entry.end);
    return true;
  });
  const made: Entry[] = [];
  for (const entry of all) {
    const same = redone.get(entry.createdBy);
    const i = same === undefined ? -1 : findLastIndex(same, (was) => sameIdentity(was, entry));
    const was = i < 0 ? undefined : same![i]!;
    if (was === undefined || was.size !== entry.size || !sameAttribution(was.attribution, entry.attribution) || was.start !== entry.start || was.action !== entry.action) {
      deltas.entry(entry, 1n);
      made.push(entry);
      continue;
    }
    same!.splice(i, 1);
    // An entry made again as it was stored stays (its end updated if that changed): rows not
    // rewritten are the catch-up's main saving.
    if (was.end !== entry.end || was.endedBy !== entry.endedBy) {
      moveEnd(deltas, was, was.end, entry.end);
      was.end = entry.end;
      was.endedBy = entry.endedBy;
      ended.push(was);
    }
  }
  const removed: number[] = [];
  for (const left of redone.values()) {
    for (const entry of left) {
      deltas.entry(entry, -1n);
      removed.push(entry.id!);
    }
  }
  return { removed, ended, made, deltas };
}

/** An entry's end moved from `was` to `now` (null: alive): its level comes back at the old end and goes at the new. */
function moveEnd(deltas: Deltas, entry: Entry, was: number | null, now: number | null): void {
  if (was !== null) deltas.add(entry, was, 1n);
  if (now !== null) deltas.add(entry, now, -1n);
}

function findLastIndex<T>(list: T[], test: (item: T) => boolean): number {
  for (let i = list.length - 1; i >= 0; i--) if (test(list[i]!)) return i;
  return -1;
}

/** The same entry of the same event (createdBy compared by the caller). */
const sameIdentity = (a: Entry, b: Entry) =>
  a.kind === b.kind && a.bucket === b.bucket && a.objectKey === b.objectKey && a.versionId === b.versionId && a.uploadId === b.uploadId && a.partNumber === b.partNumber;
const sameAttribution = (a: Attribution, b: Attribution) =>
  a.provider === b.provider && a.customer === b.customer && a.feature === b.feature && a.clientType === b.clientType && a.clientId === b.clientId;

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

/**
 * Joined, not a template literal: that makes a tree of cons strings (four or five per key were still
 * alive), and a catch-up holds about one key per event it applies: 9 MB of the writer's heap at 62,000.
 */
export const deltaKey = (hour: number, bucket: string, action: ActionName, a: Attribution): string =>
  [hour, bucket, action, a.provider, a.customer, a.feature, a.clientType, a.clientId].join('/');

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
    // Most measures of a row stay 0n: adding 0n would still allocate a new BigInt per measure.
    for (let i = 0; i < d.length; i++) if (d[i] !== 0n) row.values[i]! += d[i]!;
  }

  /** Adds (sign +1) or removes (−1) everything an entry contributes. */
  entry(entry: Entry, sign: 1n | -1n): void {
    this.add(entry, entry.start, sign);
    if (entry.end !== null) this.add(entry, entry.end, sign === 1n ? -1n : 1n);
  }
}
