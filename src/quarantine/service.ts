/**
 * Reading a tenant's own quarantine (GET /v1/quarantine and /v1/quarantine/{id}): newest first, paged
 * by id, each entry as the API shows it. An entry of another tenant is answered like one that does
 * not exist, so that ids tell nothing of other tenants. Knows nothing of HTTP.
 */
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { BmError } from '../errors.js';
import type { FieldError } from '../events/field-error.js';
import { formatTimestamp } from '../events/timestamp.js';
import type { QuarantineEntry, QuarantineStore } from '../store/types.js';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;

const param = (description: string) => Type.Optional(Type.String({ maxLength: 64, description }));

export const QUARANTINE_QUERY = Type.Object(
  {
    limit: param(`entries per page, 1..${MAX_LIMIT} (default ${DEFAULT_LIMIT})`),
    cursor: param("a previous page's nextCursor"),
    includeReplayed: param('`true`: also the entries a replay has since stored (default `false`)'),
  },
  { additionalProperties: false },
);

export const QUARANTINE_ID = Type.Object({ id: Type.String({ description: 'the entry id, as listed' }) });

const FIELD_ERROR = Type.Object({ path: Type.String(), message: Type.String(), expected: Type.String(), received: Type.String() }, { additionalProperties: true });

const ENTRY_FIELDS = {
  id: Type.Integer(),
  receivedAt: Type.String({ description: 'ISO 8601 UTC' }),
  code: Type.String({ description: 'the error code the input was refused with' }),
  source: Type.String({ description: 'the route it came in on, e.g. `POST /s3/batch`' }),
  index: Type.Union([Type.Integer(), Type.Null()], { description: 'its position in the batch, when it was one element of one' }),
  errors: Type.Array(FIELD_ERROR),
  bodyBytes: Type.Integer({ description: 'bytes kept of the input' }),
  truncated: Type.Boolean({ description: 'the input was longer than the bytes kept' }),
  replayedAt: Type.Union([Type.String(), Type.Null()], { description: 'when a replay stored it, ISO 8601 UTC' }),
};

export const QUARANTINE_PAGE = Type.Object({
  entries: Type.Array(Type.Object(ENTRY_FIELDS), { description: 'newest first' }),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});

export const QUARANTINE_ENTRY = Type.Object({
  ...ENTRY_FIELDS,
  body: Type.Object(
    {
      encoding: Type.Union([Type.Literal('utf8'), Type.Literal('base64')]),
      text: Type.String(),
    },
    { description: 'the input as kept: its text when it is valid UTF-8, base64 otherwise (a compressed or binary body)' },
  ),
});

export type RawQuarantineQuery = Static<typeof QUARANTINE_QUERY>;
type Page = Static<typeof QUARANTINE_PAGE>;
type Entry = Static<typeof QUARANTINE_ENTRY>;

const ID = /^[1-9][0-9]{0,14}$/;

export class QuarantineService {
  constructor(private readonly store: Pick<QuarantineStore, 'list' | 'get'>) {}

  async list(tenantId: number, raw: RawQuarantineQuery): Promise<Page> {
    const errors: FieldError[] = [];
    let limit = DEFAULT_LIMIT;
    if (raw.limit !== undefined) {
      const n = Number(raw.limit);
      if (/^\d+$/.test(raw.limit) && n >= 1 && n <= MAX_LIMIT) limit = n;
      else errors.push({ path: '/limit', message: `limit must be an integer from 1 to ${MAX_LIMIT}`, expected: `1..${MAX_LIMIT}`, received: JSON.stringify(raw.limit) });
    }
    // The cursor is the last id shown; as ids are checked against the tenant, it cannot reach further.
    if (raw.cursor !== undefined && !ID.test(raw.cursor)) errors.push({ path: '/cursor', message: 'cursor is not valid', expected: 'a nextCursor from a previous page', received: JSON.stringify(raw.cursor) });
    if (raw.includeReplayed !== undefined && raw.includeReplayed !== 'true' && raw.includeReplayed !== 'false') {
      errors.push({ path: '/includeReplayed', message: 'includeReplayed must be true or false', expected: 'true or false', received: JSON.stringify(raw.includeReplayed) });
    }
    if (errors.length > 0) throw new BmError('BM_ERR_QUERY_INVALID', errors[0]!.message, { errors });
    const rows = await this.store.list({
      tenantId,
      newestFirst: true,
      limit: limit + 1,
      includeReplayed: raw.includeReplayed === 'true',
      ...(raw.cursor === undefined ? {} : { beforeId: Number(raw.cursor) }),
    });
    const entries = rows.slice(0, limit);
    return { entries: entries.map(summary), nextCursor: rows.length > limit ? String(entries[entries.length - 1]!.id) : null };
  }

  async get(tenantId: number, id: string): Promise<Entry> {
    const entry = ID.test(id) ? await this.store.get(Number(id)) : undefined;
    if (entry === undefined || entry.tenantId !== tenantId) throw new BmError('BM_ERR_NOT_FOUND', `No quarantine entry ${JSON.stringify(id.slice(0, 40))}.`);
    return { ...summary(entry), body: bodyText(entry.body) };
  }
}

/** A kept input as text: itself when it is valid UTF-8, else base64 (never a lossy decoding). */
export function bodyText(body: Buffer): Entry['body'] {
  const text = body.toString('utf8');
  return Buffer.from(text, 'utf8').equals(body) ? { encoding: 'utf8', text } : { encoding: 'base64', text: body.toString('base64') };
}

function summary(q: QuarantineEntry): Page['entries'][number] {
  return {
    id: q.id,
    receivedAt: formatTimestamp(q.receivedAt),
    code: q.code,
    source: q.source,
    index: q.index ?? null,
    errors: q.errors,
    bodyBytes: q.body.length,
    truncated: q.truncated,
    replayedAt: q.replayedAt === null ? null : formatTimestamp(q.replayedAt),
  };
}
