/**
 * The reference event mix: what one busy tenant's collectors send, generated from a fixed seed so that
 * every run (and every process of a run) sends the same events. Wire format as the clients in the
 * field send it (shared/spec/wire-format.md), habits included: `""` version ids, the `bucketName` and
 * `fileType` aliases, fractional and offset timestamps, capitalized providers, an extra `serviceId`.
 *
 * Proportions are those of object-storage request logs of a media-heavy SaaS: reads dominate, then
 * writes; multipart, deletes, listings and bucket calls make up the rest.
 */

/** Small, fast, seeded PRNG (mulberry32): the same seed gives the same stream on every machine. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  int(min: number, maxInclusive: number): number {
    return min + Math.floor(this.next() * (maxInclusive - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  hex(length: number): string {
    let out = '';
    while (out.length < length) out += Math.floor(this.next() * 0x100000000).toString(16).padStart(8, '0');
    return out.slice(0, length);
  }

  alnum(length: number): string {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    let out = '';
    for (let i = 0; i < length; i++) out += alphabet[Math.floor(this.next() * alphabet.length)];
    return out;
  }

  /** Exponentially distributed with this mean. */
  exp(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }
}

/**
 * Zipf-distributed index in [0, n): a few values are very common and there is a long tail, which is
 * how customers, clients and object keys repeat in real traffic (and what dictionary encoding and
 * index locality see).
 */
export class Zipf {
  private readonly cdf: Float64Array;

  constructor(
    n: number,
    exponent: number,
    private readonly rng: Rng,
  ) {
    this.cdf = new Float64Array(n);
    let sum = 0;
    for (let i = 0; i < n; i++) this.cdf[i] = sum += 1 / (i + 1) ** exponent;
    for (let i = 0; i < n; i++) this.cdf[i]! /= sum;
  }

  next(): number {
    const u = this.rng.next();
    let lo = 0;
    let hi = this.cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

export const MIX_SEED = 20240501;

/** Where a client eventId goes in a generated event's JSON; replaced by a fresh id on every send. */
export const EVENT_ID_MARK = '@@bench-event-id@@';

/** Share of events that carry a client eventId (most existing clients send none). */
const EVENT_ID_SHARE = 0.02;

const ACTION_WEIGHTS = [
  ['GetObject', 44],
  ['PutObject', 22],
  ['HeadObject', 5],
  ['ListObjectsV2', 6],
  ['DeleteObject', 5],
  ['DeleteObjects', 1],
  ['CopyObject', 1.5],
  ['CreateMultipartUpload', 1],
  ['UploadPart', 5],
  ['CompleteMultipartUpload', 1],
  ['AbortMultipartUpload', 0.2],
  ['ListParts', 0.3],
  ['HeadBucket', 3],
  ['GetBucketLocation', 1.5],
  ['GetBucketVersioning', 0.5],
  ['ListBuckets', 1],
  ['GetObjectAcl', 1],
  ['ListMultipartUploads', 0.5],
  ['PutObjectAcl', 0.5],
] as const;

const FEATURES = [
  'photo-upload', 'photo-view', 'video-upload', 'video-stream', 'thumbnails', 'backup', 'restore', 'export',
  'import', 'share-link', 'avatar', 'attachments', 'audit-log', 'sync', 'preview', 'transcode', 'archive',
  'search-index', 'reports', 'admin-console',
];
const CLIENT_TYPES = [
  ['web', 0.45],
  ['ios', 0.2],
  ['android', 0.2],
  ['server', 0.15],
] as const;
const PROVIDERS = [
  ['aws', 0.6],
  ['backblaze', 0.25],
  ['wasabi', 0.15],
] as const;
const EXTENSIONS = ['jpg', 'png', 'webp', 'mp4', 'mov', 'pdf', 'docx', 'zip', 'tar.gz', 'mp3', 'json', 'csv'];
const KEY_ROOTS = ['users', 'uploads', 'media', 'backups/db', 'exports', 'thumbs', 'attachments', 'tmp/incoming'];
const SERVICES = ['svc-media-api', 'svc-backup-worker', 'svc-web', 'svc-transcoder'];

interface Upload {
  id: string;
  provider: string;
  bucket: string;
  key: string;
  parts: number;
}

const MAX_ACTIVE_UPLOADS = 200;

interface StoredObject {
  key: string;
  bucket: number;
  size: number;
  category: string;
}

export interface MixUniverse {
  customers: string[];
  clientIds: string[];
  buckets: { name: string; provider: string; versioned: boolean }[];
  objects: StoredObject[];
}

export interface MixOptions {
  customers?: number;
  clientIds?: number;
  buckets?: number;
  objects?: number;
}

function weighted<T>(rng: Rng, items: readonly (readonly [T, number])[]): T {
  let total = 0;
  for (const [, w] of items) total += w;
  let u = rng.next() * total;
  for (const [item, w] of items) {
    u -= w;
    if (u < 0) return item;
  }
  return items[items.length - 1]![0];
}

/** The named things events refer to: built once from the seed, identical in every process. */
export function buildUniverse(seed = MIX_SEED, options: MixOptions = {}): MixUniverse {
  const rng = new Rng(seed);
  const customers = Array.from({ length: options.customers ?? 1000 }, () => `cus_${rng.alnum(14)}`);
  const clientIds = Array.from({ length: options.clientIds ?? 5000 }, () => `dev-${rng.hex(8)}-${rng.hex(4)}`);
  const envs = ['prod', 'staging', 'eu', 'us', 'ap'];
  const buckets = Array.from({ length: options.buckets ?? 50 }, (_, i) => ({
    name: `${rng.pick(['acme', 'northwind', 'contoso', 'globex'])}-${rng.pick(['media', 'backups', 'assets', 'logs', 'exports'])}-${rng.pick(envs)}-${i}`,
    provider: weighted(rng, PROVIDERS),
    versioned: rng.chance(0.2),
  }));
  const bucketZipf = new Zipf(buckets.length, 1.0, rng);
  const objects: StoredObject[] = [];
  for (let i = 0; i < (options.objects ?? 50_000); i++) {
    const ext = rng.pick(EXTENSIONS);
    const root = rng.pick(KEY_ROOTS);
    const day = `2024/${String(rng.int(1, 12)).padStart(2, '0')}/${String(rng.int(1, 28)).padStart(2, '0')}`;
    // 40-60 characters, like generated keys in the field: a tenant-ish folder, a date, a random name.
    const key = `${root}/${rng.hex(6)}/${day}/${rng.hex(rng.int(10, 18))}.${ext}`;
    const category = ext === 'mp4' || ext === 'mov' ? 'video' : ext === 'mp3' ? 'audio' : ['zip', 'tar.gz'].includes(ext) ? 'archive' : ['jpg', 'png', 'webp'].includes(ext) ? 'image' : 'document';
    // Log-normal-ish sizes: mostly tens of KB to a few MB, a tail of large files.
    const size = Math.min(5e12, Math.round(Math.exp(rng.exp(2.2) + 8 + rng.next() * 4)));
    objects.push({ key, bucket: bucketZipf.next(), size, category });
  }
  return { customers, clientIds, buckets, objects };
}

/** A timestamp as the clients format the provider's Date header: mostly whole-second UTC. */
function wireTimestamp(rng: Rng, epochSeconds: number): string {
  const roll = rng.next();
  // Whole seconds, milliseconds, or the +02:00 offset form of the same instant.
  const tail = roll < 0.85 ? '' : roll < 0.95 ? `.${String(rng.int(0, 999)).padStart(3, '0')}` : '+02:00';
  return formatWireTimestamp({ seconds: epochSeconds, tail }, 0);
}

/**
 * Generates wire events (as JSON texts) one after another. Events carrying a client eventId hold
 * EVENT_ID_MARK in its place, so that each send can make it unique.
 */
export class EventMix {
  private readonly rng: Rng;
  private readonly customer: Zipf;
  private readonly client: Zipf;
  private readonly feature: Zipf;
  private readonly object: Zipf;
  private uploadSeq = 0;
  /** Multipart uploads in progress: their parts, completion and listing reuse the upload id. */
  private readonly uploads: Upload[] = [];

  constructor(
    private readonly universe: MixUniverse,
    /** Events are stamped at most an hour before this (Unix seconds). */
    private readonly now: number,
    seed = MIX_SEED + 1,
  ) {
    this.rng = new Rng(seed);
    this.customer = new Zipf(universe.customers.length, 0.9, this.rng);
    this.client = new Zipf(universe.clientIds.length, 0.8, this.rng);
    this.feature = new Zipf(FEATURES.length, 1.1, this.rng);
    this.object = new Zipf(universe.objects.length, 0.9, this.rng);
  }

  /** The next event as a plain object (wire field names). */
  nextEvent(): Record<string, unknown> {
    const rng = this.rng;
    const action = weighted(rng, ACTION_WEIGHTS);
    const object = this.universe.objects[this.object.next()]!;
    const bucket = this.universe.buckets[object.bucket]!;
    // Collectors send within seconds; a few flush late (offline devices, retries), up to an hour.
    const delay = rng.chance(0.05) ? rng.int(60, 3600) : Math.min(3600, Math.round(rng.exp(15)));
    const event: Record<string, unknown> = {
      action,
      timestamp: wireTimestamp(rng, this.now - delay),
      provider: rng.chance(0.02) ? bucket.provider[0]!.toUpperCase() + bucket.provider.slice(1) : bucket.provider,
    };
    if (rng.chance(0.95)) event.customerId = this.universe.customers[this.customer.next()];
    if (rng.chance(0.8)) event.featureId = FEATURES[this.feature.next()];
    if (rng.chance(0.9)) event.clientType = weighted(rng, CLIENT_TYPES);
    if (rng.chance(0.85)) event.clientId = this.universe.clientIds[this.client.next()];
    const bucketField = rng.chance(0.03) ? 'bucketName' : 'bucket';
    const versionId = () => (bucket.versioned && rng.chance(0.5) ? rng.alnum(32) : '');
    switch (action) {
      case 'GetObject':
        event[bucketField] = bucket.name;
        event.objectKey = object.key;
        event.bytes = rng.chance(0.1) ? rng.int(0, object.size) : object.size; // ranged reads
        event.versionId = versionId();
        if (rng.chance(0.15)) event.isBillableEgress = rng.chance(0.3);
        break;
      case 'PutObject':
        event[bucketField] = bucket.name;
        event.objectKey = object.key;
        event.bytes = object.size;
        if (rng.chance(0.7)) event.versionId = versionId();
        if (rng.chance(0.6)) event[rng.chance(0.1) ? 'fileType' : 'objectCategory'] = object.category;
        break;
      case 'HeadObject':
      case 'GetObjectAcl':
      case 'PutObjectAcl':
        event[bucketField] = bucket.name;
        event.objectKey = object.key;
        event.versionId = versionId();
        break;
      case 'ListObjectsV2':
        event[bucketField] = bucket.name;
        if (rng.chance(0.7)) event.objectKeyPrefix = object.key.slice(0, object.key.indexOf('/', object.key.indexOf('/') + 1) + 1);
        break;
      case 'DeleteObject':
        event[bucketField] = bucket.name;
        event.objectKey = object.key;
        if (bucket.versioned) event.resultingDeleteMarkerVersionId = rng.alnum(32);
        break;
      case 'DeleteObjects': {
        event[bucketField] = bucket.name;
        const count = rng.int(2, 20);
        event.deletedObjects = Array.from({ length: count }, () => ({ objectKey: this.universe.objects[this.object.next()]!.key }));
        break;
      }
      case 'CopyObject': {
        const source = this.universe.objects[this.object.next()]!;
        event[bucketField] = bucket.name;
        event.objectKey = object.key;
        event.copySource = { bucket: this.universe.buckets[source.bucket]!.name, objectKey: source.key };
        break;
      }
      case 'CreateMultipartUpload': {
        const upload = this.startUpload(bucket.provider, bucket.name, object.key);
        event.provider = upload.provider;
        event[bucketField] = upload.bucket;
        event.objectKey = upload.key;
        event.uploadId = upload.id;
        break;
      }
      case 'UploadPart': {
        const upload = this.activeUpload(bucket.provider, bucket.name, object.key);
        event.provider = upload.provider;
        event[bucketField] = upload.bucket;
        event.objectKey = upload.key;
        event.uploadId = upload.id;
        event.partNumber = Math.min(10_000, ++upload.parts);
        event.bytes = rng.chance(0.8) ? 8 * 1024 * 1024 : rng.int(1, 8 * 1024 * 1024);
        break;
      }
      case 'CompleteMultipartUpload':
      case 'AbortMultipartUpload': {
        const upload = this.activeUpload(bucket.provider, bucket.name, object.key);
        this.uploads.splice(this.uploads.indexOf(upload), 1);
        event.provider = upload.provider;
        event[bucketField] = upload.bucket;
        event.uploadId = upload.id;
        event.objectKey = upload.key;
        if (action === 'CompleteMultipartUpload') event.versionId = versionId();
        break;
      }
      case 'ListParts': {
        const upload = this.activeUpload(bucket.provider, bucket.name, object.key);
        event.provider = upload.provider;
        event[bucketField] = upload.bucket;
        event.uploadId = upload.id;
        break;
      }
      case 'HeadBucket':
      case 'GetBucketLocation':
      case 'GetBucketVersioning':
      case 'ListMultipartUploads':
        event[bucketField] = bucket.name;
        break;
      case 'ListBuckets':
        break;
    }
    if (rng.chance(0.05)) event.serviceId = rng.pick(SERVICES);
    if (rng.chance(EVENT_ID_SHARE)) event.eventId = EVENT_ID_MARK;
    return event;
  }

  private startUpload(provider: string, bucket: string, key: string): Upload {
    // Upload ids are long opaque tokens (AWS: ~60-90 characters).
    const id = `${this.rng.alnum(24)}${(this.uploadSeq++).toString(36).padStart(8, '0')}${this.rng.alnum(24)}`;
    const upload = { id, provider, bucket, key, parts: 0 };
    this.uploads.push(upload);
    // Uploads that never complete are abandoned, as in the field; keep the set of live ones bounded.
    if (this.uploads.length > MAX_ACTIVE_UPLOADS) this.uploads.shift();
    return upload;
  }

  /** A recent upload in progress (one is started when there is none). */
  private activeUpload(provider: string, bucket: string, key: string): Upload {
    if (this.uploads.length === 0) return this.startUpload(provider, bucket, key);
    const recent = Math.min(this.uploads.length, 20);
    return this.uploads[this.uploads.length - 1 - Math.floor(this.rng.next() * recent)]!;
  }

  /** The next event's JSON text (EVENT_ID_MARK in place of a client eventId). */
  next(): string {
    return JSON.stringify(this.nextEvent());
  }
}

/**
 * A request body cut around its eventId marks and its events' timestamps. `build` joins the parts
 * with fresh ids, so a body sent many times never repeats an eventId (which would turn stored events
 * into duplicates), and with its timestamps moved `shift` seconds on, in the form each was sent in:
 * a pool of bodies sent again and again then stamps its events as collectors do, at the time of
 * sending less their delay, not at the same few seconds each time round (which piles every copy of
 * a key's events onto one minute, a history no collector sends, and grows with the run).
 */
export class BodyTemplate {
  private readonly parts: string[] = [];
  /** Between parts i and i+1: an eventId (null) or a timestamp. */
  private readonly slots: (WireTimestamp | null)[] = [];

  constructor(json: string) {
    const marks = new RegExp(`"${EVENT_ID_MARK}"|"timestamp":"([^"]+)"`, 'g');
    let from = 0;
    for (let m = marks.exec(json); m !== null; m = marks.exec(json)) {
      if (m[1] === undefined) {
        this.parts.push(json.slice(from, m.index));
        this.slots.push(null);
      } else {
        this.parts.push(json.slice(from, m.index + '"timestamp":"'.length));
        this.slots.push(parseWireTimestamp(m[1]));
      }
      from = m.index + m[0].length - (m[1] === undefined ? 0 : 1);
    }
    this.parts.push(json.slice(from));
  }

  /** `shift`: whole seconds. */
  build(nextId: () => string, shift = 0): string {
    if (!Number.isInteger(shift)) throw new Error(`bench body: a shift of whole seconds, not ${shift}`);
    let out = this.parts[0]!;
    for (let i = 0; i < this.slots.length; i++) {
      const slot = this.slots[i]!;
      out += (slot === null ? `"${nextId()}"` : formatWireTimestamp(slot, shift)) + this.parts[i + 1];
    }
    return out;
  }
}

/** A wire timestamp's instant and the form it was written in (see wireTimestamp). */
interface WireTimestamp {
  seconds: number;
  /** '' (whole seconds), '.123' (milliseconds), or '+02:00' (the offset form). */
  tail: string;
}

function parseWireTimestamp(text: string): WireTimestamp {
  // The three forms wireTimestamp writes; another would be rewritten wrong, so it is refused.
  const m = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:(\.\d{3})?Z|(\+02:00))$/.exec(text);
  if (m === null) throw new Error(`bench body: a timestamp of a form wireTimestamp does not write: ${text}`);
  return { seconds: Math.floor(Date.parse(text) / 1000), tail: m[2] ?? m[1] ?? '' };
}

/** `YYYY-MM-DDTHH:MM:SS` of a second, cached: a body's timestamps share a few hundred seconds. */
const secondTexts = new Map<number, string>();

function secondText(seconds: number): string {
  let text = secondTexts.get(seconds);
  if (text === undefined) {
    if (secondTexts.size > 100_000) secondTexts.clear();
    text = new Date(seconds * 1000).toISOString().slice(0, 19);
    secondTexts.set(seconds, text);
  }
  return text;
}

function formatWireTimestamp(t: WireTimestamp, shift: number): string {
  if (t.tail === '+02:00') return `${secondText(t.seconds + shift + 7200)}+02:00`;
  return `${secondText(t.seconds + shift)}${t.tail}Z`;
}

/** Client-style eventIds (UUID shaped), unique per `tag` and counter. */
export function eventIdSource(tag: string): () => string {
  const head = tag.padEnd(8, '0').slice(0, 8);
  let counter = 0;
  return () => {
    const n = (counter++).toString(16).padStart(16, '0');
    return `${head}-${n.slice(0, 4)}-4${n.slice(4, 7)}-8${n.slice(7, 10)}-${n.slice(10)}${'000000'}`;
  };
}

/** `count` single-event bodies and `count` batch bodies of `batchSize` events, from one seeded stream. */
export function singleBodies(count: number, now: number, seed = MIX_SEED + 1): BodyTemplate[] {
  const mix = new EventMix(buildUniverse(), now, seed);
  return Array.from({ length: count }, () => new BodyTemplate(mix.next()));
}

export function batchBodies(count: number, batchSize: number, now: number, seed = MIX_SEED + 2): BodyTemplate[] {
  const mix = new EventMix(buildUniverse(), now, seed);
  return Array.from({ length: count }, () => {
    const events: string[] = [];
    for (let i = 0; i < batchSize; i++) events.push(mix.next());
    return new BodyTemplate(`[${events.join(',')}]`);
  });
}
