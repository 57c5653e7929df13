/**
 * GET /v1/objects: the inventory of one bucket at an instant, for "who owns the bytes here" and for
 * auditing a stored-bytes figure down to its events. The query checked, the cursor made and read,
 * entries presented. Knows nothing of HTTP.
 */
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { BmError } from '../errors.js';
import type { FieldError } from '../events/field-error.js';
import { formatTimestamp, parseTimestamp } from '../events/timestamp.js';
import { timed } from '../query/timed.js';
import type { InventoryEntryRecord, InventoryStore, ObjectsStoreQuery } from '../store/types.js';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;
const MAX_PARAM_LENGTH = 1024;
const param = (description: string) => Type.Optional(Type.String({ maxLength: MAX_PARAM_LENGTH, description }));

export const OBJECTS_QUERY = Type.Object(
  {
    bucket: param('the bucket (required)'),
    prefix: param('only keys starting with this'),
    at: param('ISO 8601: the inventory at this instant (default now)'),
    customerId: param("only entries created by this customer's events"),
    includeVersions: param('true: every live version and delete marker; false (default): each key\'s current version'),
    limit: param(`entries per page, 1..${MAX_LIMIT} (default ${DEFAULT_LIMIT})`),
    cursor: param("a previous page's nextCursor"),
  },
  { additionalProperties: false },
);

const ATTRIBUTION = {
  provider: Type.Union([Type.String(), Type.Null()]),
  customerId: Type.Union([Type.String(), Type.Null()]),
  featureId: Type.Union([Type.String(), Type.Null()]),
  clientType: Type.Union([Type.String(), Type.Null()]),
  clientId: Type.Union([Type.String(), Type.Null()]),
};

export const OBJECTS_PAGE = Type.Object({
  bucket: Type.String(),
  at: Type.String(),
  objects: Type.Array(
    Type.Object({
      key: Type.String(),
      versionId: Type.Union([Type.String(), Type.Null()]),
      deleteMarker: Type.Boolean(),
      size: Type.Union([Type.Integer(), Type.Null()], { description: 'bytes; null when unknown (a copy of a source the inventory does not know)' }),
      created: Type.Object({ at: Type.String(), eventId: Type.String(), action: Type.String(), ...ATTRIBUTION }),
      ended: Type.Union([Type.Object({ at: Type.String(), eventId: Type.String() }), Type.Null()], { description: 'set when `at` is in the past and the entry ended since' }),
    }),
    { description: 'by key, then newest first' },
  ),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});

export type RawObjectsQuery = Static<typeof OBJECTS_QUERY>;
export type ObjectsPage = Static<typeof OBJECTS_PAGE>;

const invalid = (errors: FieldError[]) => new BmError('BM_ERR_QUERY_INVALID', errors[0]!.message, { errors });
const shown = (value: string) => JSON.stringify(value.slice(0, 40));

export class ObjectsService {
  constructor(
    private readonly inventory: Pick<InventoryStore, 'objects'>,
    private readonly now: () => number = () => Math.floor(Date.now() / 1000),
  ) {}

  async list(tenantId: number, raw: RawObjectsQuery, signal?: AbortSignal): Promise<ObjectsPage> {
    const query = this.#parse(raw);
    const entries = await timed(this.inventory.objects(tenantId, { ...query, limit: query.limit + 1 }, signal));
    const more = entries.length > query.limit;
    const page = more ? entries.slice(0, query.limit) : entries;
    const last = page[page.length - 1];
    return {
      bucket: query.bucket,
      at: formatTimestamp(query.at),
      objects: page.map(present),
      nextCursor: more && last !== undefined ? encodeCursor(last.objectKey, last.id) : null,
    };
  }

  #parse(raw: RawObjectsQuery): ObjectsStoreQuery {
    const errors: FieldError[] = [];
    if (raw.bucket === undefined || raw.bucket === '') errors.push({ path: '/bucket', message: 'bucket is required', expected: 'a bucket name', received: 'nothing' });
    let at = this.now();
    if (raw.at !== undefined) {
      const seconds = parseTimestamp(raw.at);
      if (seconds === undefined) errors.push({ path: '/at', message: 'at must be an ISO 8601 timestamp', expected: 'e.g. 2026-11-01T12:00:00Z', received: shown(raw.at) });
      else at = seconds;
    }
    let includeVersions = false;
    if (raw.includeVersions !== undefined) {
      if (raw.includeVersions === 'true' || raw.includeVersions === 'false') includeVersions = raw.includeVersions === 'true';
      else errors.push({ path: '/includeVersions', message: 'includeVersions must be true or false', expected: 'true or false', received: shown(raw.includeVersions) });
    }
    let limit = DEFAULT_LIMIT;
    if (raw.limit !== undefined) {
      const n = Number(raw.limit);
      if (/^\d+$/.test(raw.limit) && n >= 1 && n <= MAX_LIMIT) limit = n;
      else errors.push({ path: '/limit', message: `limit must be an integer from 1 to ${MAX_LIMIT}`, expected: `1..${MAX_LIMIT}`, received: shown(raw.limit) });
    }
    let after: ObjectsStoreQuery['after'];
    if (raw.cursor !== undefined) {
      after = decodeCursor(raw.cursor, raw.prefix ?? '');
      if (after === undefined) errors.push({ path: '/cursor', message: 'cursor is not valid', expected: 'a nextCursor from a previous page', received: 'another string' });
    }
    if (errors.length > 0) throw invalid(errors);
    return {
      bucket: raw.bucket!,
      at,
      includeVersions,
      limit,
      ...(raw.prefix === undefined ? {} : { prefix: raw.prefix }),
      ...(raw.customerId === undefined ? {} : { customerId: raw.customerId }),
      ...(after === undefined ? {} : { after }),
    };
  }
}

const encodeCursor = (objectKey: string, id: number): string => Buffer.from(JSON.stringify([objectKey, id])).toString('base64url');

/**
 * A cursor this listing could have made, or undefined: written exactly as encodeCursor writes it,
 * an entry id (from 1), a key under the prefix. A hand-made one before the first key would answer
 * the first page again as if it were a next page.
 */
function decodeCursor(cursor: string, prefix: string): ObjectsStoreQuery['after'] {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== 'string' || !Number.isSafeInteger(value[1])) return undefined;
    const [objectKey, id] = value as [string, number];
    if (id >= 1 && objectKey.startsWith(prefix) && encodeCursor(objectKey, id) === cursor) return { objectKey, id };
  } catch {
    // Not ours: answered as invalid below.
  }
  return undefined;
}

function present(e: InventoryEntryRecord): ObjectsPage['objects'][number] {
  return {
    key: e.objectKey,
    versionId: e.versionId,
    deleteMarker: e.deleteMarker,
    size: e.size === null ? null : Number(e.size),
    created: { ...e.created, at: formatTimestamp(e.created.at) },
    ended: e.ended === null ? null : { at: formatTimestamp(e.ended.at), eventId: e.ended.eventId },
  };
}
