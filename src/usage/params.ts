/**
 * The parameters of GET /v1/usage and /v1/usage/reconcile (and of `bucketmeter usage`), checked all
 * at once: every bad one is named in the 400, with what was expected and what came.
 */
import { BmError } from '../errors.js';
import { isActionName } from '../events/catalogue.js';
import type { FieldError } from '../events/field-error.js';
import { parseTimestamp } from '../events/timestamp.js';
import { DIMENSIONS } from './shapes.js';
import type { Dimension } from './shapes.js';
import { GRANULARITIES, isTimeZone } from './windows.js';
import type { Granularity } from './windows.js';

/** Rows per page; a longer answer continues with nextCursor. */
export const MAX_ROWS = 100_000;
export const MAX_RANGE_DAYS = 400;
const MAX_PARAM_LENGTH = 1024;

export interface UsageRequest {
  /** Epoch seconds, whole hours. */
  from: number;
  to: number;
  granularity: Granularity;
  timeZone: string;
  groupBy: Dimension[];
  filters: Partial<Record<Dimension, string[]>>;
  format: Format;
  limit: number;
  cursor?: string;
  /** Adds the storage measures (inventory/measures.ts STORAGE_MEASURES) after the request measures. */
  storage: boolean;
}

/** Answer formats: usage has json and csv; cost adds focus (FinOps FOCUS CSV). */
export type Format = 'json' | 'csv' | 'focus';
const USAGE_FORMATS: readonly Format[] = ['json', 'csv'];

/** A range of whole days (reconcile, verify) or whole hours (rebuild). */
export interface ReconcileRequest {
  /** Epoch seconds. */
  from: number;
  to: number;
}

type Raw = Record<string, unknown>;

const shown = (value: string) => JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}...` : value);

class Params {
  readonly errors: FieldError[] = [];

  constructor(
    private readonly raw: Raw,
    known: readonly string[],
  ) {
    for (const name of Object.keys(raw)) {
      if (!known.includes(name)) this.fail(name, `unknown parameter ${name}`, `one of ${known.join(', ')}`, 'present');
    }
  }

  fail(name: string, message: string, expected: string, received: string): void {
    this.errors.push({ path: `/${name}`, message, expected, received });
  }

  /** Every value of a repeatable parameter. */
  list(name: string): string[] {
    const value = this.raw[name];
    if (value === undefined) return [];
    const values = Array.isArray(value) ? value : [value];
    if (values.some((v) => typeof v !== 'string' || v.length > MAX_PARAM_LENGTH)) {
      this.fail(name, `${name} values are text of at most ${MAX_PARAM_LENGTH} characters`, 'short text', 'a long value');
      return [];
    }
    return values as string[];
  }

  one(name: string): string | undefined {
    const values = this.list(name);
    if (values.length > 1) this.fail(name, `${name} may be given once`, 'one value', `${values.length} values`);
    return values[0];
  }

  /** Epoch seconds of a required ISO 8601 time with a zone, on a whole UTC hour (or day). */
  instant(name: string, unit: 3600 | 86400): number | undefined {
    const text = this.one(name);
    const what = unit === 3600 ? 'a whole hour' : 'a UTC midnight';
    if (text === undefined) {
      this.fail(name, `${name} is required`, `an ISO 8601 time with a zone on ${what}, e.g. 2026-11-01T00:00:00Z`, 'nothing');
      return undefined;
    }
    const seconds = parseTimestamp(text);
    if (seconds === undefined) this.fail(name, `${name} must be an ISO 8601 time with a zone`, 'e.g. 2026-11-01T00:00:00Z', shown(text));
    // parseTimestamp drops a fraction of a second (events are stored by the second): 01:00:00.5 is not on the hour.
    else if (seconds % unit !== 0 || /\.\d*[1-9]/.test(text)) this.fail(name, `${name} must be on ${what}${unit === 3600 ? ' (UTC): usage is stored per hour' : ''}`, `a time on ${what}`, shown(text));
    else return seconds;
    return undefined;
  }

  range(from: number | undefined, to: number | undefined): void {
    if (from === undefined || to === undefined) return;
    if (to <= from) this.fail('to', 'to must be after from', 'a time after from', `${(to - from) / 3600} hours from it`);
    else if (to - from > MAX_RANGE_DAYS * 86400) this.fail('to', `from and to may be at most ${MAX_RANGE_DAYS} days apart`, `at most ${MAX_RANGE_DAYS} days`, `${Math.ceil((to - from) / 86400)} days`);
  }

  done<T>(value: T): T {
    if (this.errors.length > 0) {
      const names = [...new Set(this.errors.map((e) => e.path.slice(1)))].join(', ');
      throw new BmError('BM_ERR_QUERY_INVALID', `Invalid query parameters: ${names}.`, { errors: this.errors });
    }
    return value;
  }
}

const USAGE_PARAMS = ['from', 'to', 'granularity', 'timeZone', 'groupBy', 'format', 'limit', 'cursor', 'storage', ...DIMENSIONS];

/**
 * `accept`: the Accept header; text/csv chooses CSV when no format is given. `formats`: those the
 * endpoint answers (/v1/costs adds focus to the same parameters).
 */
export function parseUsageParams(raw: Raw, accept?: string, formats: readonly Format[] = USAGE_FORMATS): UsageRequest {
  const p = new Params(raw, USAGE_PARAMS);
  const from = p.instant('from', 3600);
  const to = p.instant('to', 3600);
  p.range(from, to);

  const granularity = p.one('granularity') ?? 'none';
  if (!(GRANULARITIES as readonly string[]).includes(granularity)) p.fail('granularity', 'unknown granularity', GRANULARITIES.join(', '), shown(granularity));

  const timeZone = p.one('timeZone') ?? 'UTC';
  if (!isTimeZone(timeZone)) p.fail('timeZone', 'timeZone must be an IANA time zone', 'e.g. Europe/Berlin or UTC', shown(timeZone));

  const groupBy: Dimension[] = [];
  const groupText = p.one('groupBy');
  if (groupText !== undefined && groupText !== '') {
    for (const name of groupText.split(',')) {
      if (!(DIMENSIONS as readonly string[]).includes(name)) p.fail('groupBy', `unknown dimension ${shown(name)}`, DIMENSIONS.join(', '), shown(name));
      else if (groupBy.includes(name as Dimension)) p.fail('groupBy', `${name} is listed twice`, 'each dimension once', shown(groupText));
      else groupBy.push(name as Dimension);
    }
  }

  const filters: Partial<Record<Dimension, string[]>> = {};
  for (const dimension of DIMENSIONS) {
    const values = p.list(dimension);
    if (values.length === 0) continue;
    if (dimension === 'action') {
      for (const v of values) if (v !== '' && !isActionName(v)) p.fail('action', 'unknown action', 'an event kind, e.g. GetObject', shown(v));
    }
    filters[dimension] = [...new Set(values)];
  }

  let format = p.one('format');
  if (format === undefined) format = accept !== undefined && /\btext\/csv\b/i.test(accept) ? 'csv' : 'json';
  if (!(formats as readonly string[]).includes(format)) p.fail('format', 'unknown format', formats.join(', '), shown(format));

  let limit = MAX_ROWS;
  const limitText = p.one('limit');
  if (limitText !== undefined) {
    limit = Number(limitText);
    if (!/^\d+$/.test(limitText) || limit < 1 || limit > MAX_ROWS) p.fail('limit', `limit must be an integer from 1 to ${MAX_ROWS}`, `1..${MAX_ROWS}`, shown(limitText));
  }
  const cursor = p.one('cursor');
  const storage = p.one('storage') ?? 'false';
  if (storage !== 'true' && storage !== 'false') p.fail('storage', 'storage must be true or false', 'true or false', shown(storage));

  return p.done({
    storage: storage === 'true',
    from: from!,
    to: to!,
    granularity: granularity as Granularity,
    timeZone,
    groupBy,
    filters,
    format: format as Format,
    limit,
    ...(cursor === undefined ? {} : { cursor }),
  });
}

/** from and to on UTC midnights (reconcile: receipts are per UTC day) or on whole hours (rebuild). */
export function parseRangeParams(raw: Raw, unit: 86400 | 3600 = 86400): ReconcileRequest {
  const p = new Params(raw, ['from', 'to']);
  const from = p.instant('from', unit);
  const to = p.instant('to', unit);
  p.range(from, to);
  return p.done({ from: from!, to: to! });
}
