/** Reading quarantine entries (they are written by commit units, on the writer thread). */
import type { Statement } from 'better-sqlite3';
import type { FieldError } from '../../events/field-error.js';
import type { QuarantineEntry, QuarantineQuery } from '../types.js';
import type { Connection } from './connection.js';

interface QuarantineRow {
  id: number;
  tenantId: number;
  tenantName: string;
  receivedAt: number;
  code: string;
  errors: string;
  source: string;
  batchIndex: number | null;
  body: Buffer;
  truncated: number;
  replayedAt: number | null;
}

// LEFT JOIN: an entry must never disappear from view, even if its tenant row were missing.
const SELECT_ENTRY = `SELECT q.id AS id, q.tenant AS tenantId, coalesce(t.name, '') AS tenantName,
  q.received_at AS receivedAt, q.code AS code, q.errors AS errors, q.source AS source,
  q.batch_index AS batchIndex, q.body AS body, q.truncated AS truncated, q.replayed_at AS replayedAt
  FROM quarantine q LEFT JOIN tenants t ON t.id = q.tenant`;

function entry(row: QuarantineRow): QuarantineEntry {
  const result: QuarantineEntry = {
    id: row.id,
    tenantId: row.tenantId,
    tenantName: row.tenantName,
    receivedAt: row.receivedAt,
    code: row.code,
    errors: JSON.parse(row.errors) as FieldError[],
    source: row.source,
    body: row.body,
    truncated: row.truncated === 1,
    replayedAt: row.replayedAt,
  };
  if (row.batchIndex !== null) result.index = row.batchIndex;
  return result;
}

/** Synchronous: the store wraps each call for error mapping and the closed check. */
export class QuarantineReader {
  readonly #get: Statement;
  readonly #lists = new Map<string, Statement>();
  readonly #countSince: Statement;

  constructor(private readonly db: Connection) {
    this.#get = db.prepare(`${SELECT_ENTRY} WHERE q.id = ?`);
    // Ids grow with time: the first id of the period bounds the tenant's index range, read index-only.
    this.#countSince = db
      .prepare('SELECT count(*) FROM quarantine WHERE tenant = ? AND id >= (SELECT coalesce(min(id), 9223372036854775807) FROM quarantine WHERE received_at >= ?)')
      .pluck();
  }

  countSince(tenantId: number, since: number): number {
    return this.#countSince.get(tenantId, since) as number;
  }

  get(id: number): QuarantineEntry | undefined {
    const row = this.#get.get(id) as QuarantineRow | undefined;
    return row === undefined ? undefined : entry(row);
  }

  list(query: QuarantineQuery): QuarantineEntry[] {
    const where = ['q.id > ?'];
    const params: number[] = [query.newestFirst ? 0 : (query.afterId ?? 0)];
    if (query.tenantId !== undefined) {
      where.push('q.tenant = ?');
      params.push(query.tenantId);
    }
    if (query.newestFirst && query.beforeId !== undefined) {
      where.push('q.id < ?');
      params.push(query.beforeId);
    }
    if (!query.includeReplayed) where.push('q.replayed_at IS NULL');
    params.push(query.limit);
    const sql = `${SELECT_ENTRY} WHERE ${where.join(' AND ')} ORDER BY q.id${query.newestFirst ? ' DESC' : ''} LIMIT ?`;
    let statement = this.#lists.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.#lists.set(sql, statement);
    }
    return (statement.all(params) as QuarantineRow[]).map(entry);
  }
}
