/**
 * The reference model of the object inventory: a simulated set of buckets, written apart from
 * src/inventory (slow and plain on purpose), replaying events one by one in timeline order and
 * recording each version, marker, part and upload's life. Measures come from those lives directly:
 * byte-seconds by overlap with the window, levels by what is alive at its end.
 */

export interface RefEvent {
  eventId: string;
  timestamp: number;
  action: string;
  provider: string;
  bucket: string;
  customerId?: string;
  objectKey?: string;
  versionId?: string;
  uploadId?: string;
  partNumber?: number;
  bytes?: number;
  copySource?: { bucket: string; objectKey: string; versionId?: string };
  hardDeletedVersionId?: string;
  resultingDeleteMarkerVersionId?: string;
  deletedObjects?: { objectKey: string; hardDeletedVersionId?: string; resultingDeleteMarkerVersionId?: string }[];
  force?: boolean;
}

export interface Life {
  what: 'version' | 'marker' | 'part' | 'upload';
  bucket: string;
  key: string | null;
  versionId: string | null;
  size: bigint | null;
  start: number;
  end: number | null;
  customerId: string | null;
  action: string;
  createdBy: string;
  endedBy: string | null;
  seq: number;
}

/** README "Ties within a second". */
const ORDER = ['CreateMultipartUpload', 'UploadPart|UploadPartCopy', 'PutObject|PostObject|CopyObject', 'CompleteMultipartUpload', 'AbortMultipartUpload', 'DeleteObject|DeleteObjects', 'DeleteBucket'];
const rank = (action: string) => ORDER.findIndex((names) => names.split('|').includes(action));

export function simulate(input: RefEvent[]): Life[] {
  const events = input.filter((e) => rank(e.action) >= 0);
  events.sort((a, b) => a.timestamp - b.timestamp || rank(a.action) - rank(b.action) || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0));
  const lives: Life[] = [];
  let seq = 0;
  const alive = () => lives.filter((l) => l.end === null);
  const finish = (l: Life, e: RefEvent) => {
    l.end = e.timestamp;
    l.endedBy = e.eventId;
  };
  const born = (e: RefEvent, what: Life['what'], key: string | null, versionId: string | null, size: bigint | null): Life => {
    const l: Life = { what, bucket: e.bucket, key, versionId, size, start: e.timestamp, end: null, customerId: e.customerId ?? null, action: e.action, createdBy: e.eventId, endedBy: null, seq: seq++ };
    lives.push(l);
    return l;
  };
  const objectsAt = (bucket: string, key: string) => alive().filter((l) => (l.what === 'version' || l.what === 'marker') && l.bucket === bucket && l.key === key);
  const sizeOf = (src: RefEvent['copySource']): bigint | null => {
    if (src === undefined) return null;
    const here = objectsAt(src.bucket, src.objectKey);
    let found: Life | undefined;
    if (src.versionId !== undefined) found = here.find((l) => l.versionId === src.versionId);
    else found = here.sort((a, b) => a.seq - b.seq)[here.length - 1];
    return found !== undefined && found.what === 'version' ? found.size : null;
  };
  const newVersion = (e: RefEvent, key: string, size: bigint | null) => {
    const vid = e.versionId ?? null;
    for (const l of objectsAt(e.bucket, key)) if (l.versionId === vid) finish(l, e);
    born(e, 'version', key, vid, size);
  };
  const uploadOf = (e: RefEvent) => alive().find((l) => l.what === 'upload' && l.bucket === e.bucket && l.versionId === e.uploadId);
  const partsOf = (e: RefEvent) => alive().filter((l) => l.what === 'part' && l.bucket === e.bucket && l.versionId?.startsWith(`${e.uploadId}#`));
  const remove = (e: RefEvent, key: string, hard?: string, marker?: string) => {
    if (hard !== undefined) for (const l of objectsAt(e.bucket, key)) if (l.versionId === hard) finish(l, e);
    if (marker !== undefined) born(e, 'marker', key, marker, null);
    if (hard === undefined && marker === undefined) for (const l of objectsAt(e.bucket, key)) if (l.versionId === null) finish(l, e);
  };
  for (const e of events) {
    switch (e.action) {
      case 'PutObject':
      case 'PostObject':
        newVersion(e, e.objectKey!, e.bytes === undefined ? null : BigInt(e.bytes));
        break;
      case 'CopyObject':
        newVersion(e, e.objectKey!, sizeOf(e.copySource));
        break;
      case 'CreateMultipartUpload': {
        const old = uploadOf(e);
        if (old) finish(old, e);
        // An upload's life keeps its id in versionId (the model's own bookkeeping).
        born(e, 'upload', e.objectKey!, e.uploadId!, null);
        break;
      }
      case 'UploadPart':
      case 'UploadPartCopy': {
        for (const p of partsOf(e)) if (p.versionId === `${e.uploadId}#${e.partNumber}`) finish(p, e);
        const size = e.bytes !== undefined ? BigInt(e.bytes) : e.action === 'UploadPartCopy' ? sizeOf(e.copySource) : null;
        born(e, 'part', e.objectKey ?? uploadOf(e)?.key ?? null, `${e.uploadId}#${e.partNumber}`, size);
        break;
      }
      case 'CompleteMultipartUpload': {
        const parts = partsOf(e);
        const size = parts.length === 0 || parts.some((p) => p.size === null) ? null : parts.reduce((s, p) => s + p.size!, 0n);
        for (const p of parts) finish(p, e);
        const up = uploadOf(e);
        if (up) finish(up, e);
        const key = e.objectKey ?? up?.key;
        if (key !== undefined && key !== null) newVersion(e, key, size);
        break;
      }
      case 'AbortMultipartUpload': {
        for (const p of partsOf(e)) finish(p, e);
        const up = uploadOf(e);
        if (up) finish(up, e);
        break;
      }
      case 'DeleteObject':
        remove(e, e.objectKey!, e.hardDeletedVersionId, e.resultingDeleteMarkerVersionId);
        break;
      case 'DeleteObjects':
        for (const d of e.deletedObjects!) remove(e, d.objectKey, d.hardDeletedVersionId, d.resultingDeleteMarkerVersionId);
        break;
      case 'DeleteBucket':
        if (e.force === true) for (const l of alive()) if (l.bucket === e.bucket) finish(l, e);
        break;
    }
  }
  return lives;
}

/** [byteSeconds, storedBytes, objects, deleteMarkers, unknownSizeObjects, incompleteUploadBytes] of the lives over [a, b) (seconds). */
export function measures(lives: Life[], a: number, b: number): bigint[] {
  const out = [0n, 0n, 0n, 0n, 0n, 0n];
  for (const l of lives) {
    const liveAtEnd = l.start < b && (l.end === null || l.end >= b);
    if (l.what === 'version' || l.what === 'part') {
      const size = l.size ?? 0n;
      const overlap = Math.max(0, Math.min(l.end ?? b, b) - Math.max(l.start, a));
      out[0]! += size * BigInt(overlap);
      if (liveAtEnd) out[1]! += size;
      if (liveAtEnd && l.what === 'part') out[5]! += size;
    }
    if (liveAtEnd && l.what === 'version') {
      out[2]!++;
      if (l.size === null) out[4]!++;
    }
    if (liveAtEnd && l.what === 'marker') out[3]!++;
  }
  return out;
}
