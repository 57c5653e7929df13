/**
 * The write path's domain step: decode a body, validate and normalize each event, and hand one unit
 * (valid events + quarantine entries for the invalid ones) to the committer. Knows nothing of HTTP.
 */
import { isUtf8 } from 'node:buffer';
import { BmError } from '../errors.js';
import type { RefusalCode } from '../errors.js';
import type { FieldError } from '../events/field-error.js';
import type { EventValidator } from '../events/validate.js';
import type { CommitUnit, EventOutcome } from '../store/types.js';
import type { Committer } from './committer.js';
import type { QuarantineQuota } from './quarantine-quota.js';
import type { BatchResult, SingleResult } from './results.js';
import { itemsToUnit, quarantineEntry, rejectionCode } from './unit.js';
import type { UnitSource } from './unit.js';

export interface IngestOptions {
  committer: Committer;
  validator: EventValidator;
  maxBatchEvents: number;
  quarantineMaxBytes: number;
  quota: QuarantineQuota;
  /** Most rejected events a batch reply details; `rejectedCount` counts them all. */
  maxRejectedDetailed: number;
  /** Unix seconds now; injectable for tests. */
  now?: () => number;
}

type Decoded = { ok: true; value: unknown } | { ok: false; code: RefusalCode; errors: FieldError[] };

const nowSeconds = () => Math.floor(Date.now() / 1000);

export class IngestService {
  private readonly now: () => number;

  constructor(private readonly options: IngestOptions) {
    this.now = options.now ?? nowSeconds;
  }

  /** Throws the 503 a write would get now, before its body is read (see Committer.admit). */
  admit(): void {
    this.options.committer.admit();
  }

  async ingestOne(tenantId: number, body: Buffer, source: string): Promise<SingleResult> {
    const receivedAt = this.now();
    const decoded = decodeJson(body);
    if (!decoded.ok) return this.reject(tenantId, receivedAt, source, decoded.code, decoded.errors, body);
    const { value } = decoded;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      const errors = [wholeBody('one event as a JSON object', value)];
      return this.reject(tenantId, receivedAt, source, 'BM_ERR_BODY_NOT_OBJECT', errors, body);
    }
    const result = this.options.validator.validate(value, receivedAt);
    if (!result.ok) return this.reject(tenantId, receivedAt, source, rejectionCode(result), result.errors, body);
    const [outcome] = await this.options.committer.submit({
      events: [{ tenantId, receivedAt, event: result.event }],
      quarantine: [],
    });
    return outcome!;
  }

  async ingestBatch(tenantId: number, body: Buffer, source: string): Promise<BatchResult> {
    const quotaLoaded = this.options.quota.ready(tenantId, this.now());
    if (quotaLoaded !== undefined) await quotaLoaded;
    const { committed, rejected, rejectedCount } = this.submitBatch(tenantId, body, source);
    const outcomes = await committed;
    let duplicates = 0;
    for (const o of outcomes) if (o.duplicate) duplicates++;
    return { accepted: outcomes.length - duplicates, duplicates, rejected, rejectedCount };
  }

  /**
   * Decodes, validates and submits a batch. Synchronous up to the submission, so that the decoded
   * body and its events are referenced by nothing that waits for the commit: they can die young.
   */
  private submitBatch(tenantId: number, body: Buffer, source: string): { committed: Promise<EventOutcome[]>; rejected: BatchResult['rejected']; rejectedCount: number } {
    const receivedAt = this.now();
    const refuse = (code: RefusalCode, errors: FieldError[], extra?: Record<string, unknown>) => ({
      committed: this.reject(tenantId, receivedAt, source, code, errors, body, extra),
      rejected: [],
      rejectedCount: 0,
    });
    const decoded = decodeJson(body);
    if (!decoded.ok) return refuse(decoded.code, decoded.errors);
    const { value } = decoded;
    if (!Array.isArray(value)) return refuse('BM_ERR_BODY_NOT_ARRAY', [wholeBody('a JSON array of events', value)]);
    const { maxBatchEvents } = this.options;
    if (value.length > maxBatchEvents) {
      const errors = [{ path: '', message: `the batch holds ${value.length} events; at most ${maxBatchEvents} are allowed`, expected: `at most ${maxBatchEvents} events`, received: `array of ${value.length}` }];
      return refuse('BM_ERR_BATCH_TOO_MANY_EVENTS', errors, { limit: maxBatchEvents });
    }
    const { unit, rejected } = itemsToUnit(value, this.unitSource(tenantId, receivedAt, source, body), this.options.validator);
    // Throws before anything is submitted: a refused batch stores nothing.
    this.options.quota.take(tenantId, unit.quarantine.length, receivedAt);
    const committed = unit.events.length + unit.quarantine.length > 0 ? this.options.committer.submit(unit) : Promise.resolve([]);
    return { committed, rejected: rejected.slice(0, this.options.maxRejectedDetailed), rejectedCount: unit.quarantine.length };
  }

  /**
   * Keeps a body the transport layer refused (too large, undecodable, wrong media type) in quarantine,
   * then throws the coded error for the reply.
   */
  async rejectBody(tenantId: number, source: string, code: RefusalCode, errors: FieldError[], body: Buffer, extra: Record<string, unknown> = {}): Promise<never> {
    return this.reject(tenantId, this.now(), source, code, errors, body, extra);
  }

  private async reject(tenantId: number, receivedAt: number, source: string, code: RefusalCode, errors: FieldError[], body: Buffer, extra: Record<string, unknown> = {}): Promise<never> {
    const quotaLoaded = this.options.quota.ready(tenantId, receivedAt);
    if (quotaLoaded !== undefined) await quotaLoaded;
    this.options.quota.take(tenantId, 1, receivedAt);
    const unit: CommitUnit = { events: [], quarantine: [quarantineEntry(this.unitSource(tenantId, receivedAt, source, body), code, errors, body)] };
    await this.options.committer.submit(unit);
    throw new BmError(code, errors[0]?.message, { errors, ...extra });
  }

  private unitSource(tenantId: number, receivedAt: number, source: string, body: Buffer): UnitSource {
    return { tenantId, receivedAt, source, body, quarantineMaxBytes: this.options.quarantineMaxBytes };
  }
}

const BOM = 0xfeff;

/** Parses a body as UTF-8 JSON, refusing invalid UTF-8 rather than silently replacing it. */
export function decodeJson(body: Buffer): Decoded {
  if (!isUtf8(body)) {
    return { ok: false, code: 'BM_ERR_BODY_INVALID_JSON', errors: [{ path: '', message: 'the body is not valid UTF-8', expected: 'UTF-8 JSON', received: `${body.length} bytes` }] };
  }
  let text = body.toString('utf8');
  if (text.charCodeAt(0) === BOM) text = text.slice(1);
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { ok: false, code: 'BM_ERR_BODY_INVALID_JSON', errors: [{ path: '', message: `the body is not valid JSON: ${reason}`, expected: 'JSON', received: `${body.length} bytes` }] };
  }
}

function wholeBody(expected: string, value: unknown): FieldError {
  const received = value === null ? 'null' : Array.isArray(value) ? `array of ${value.length}` : typeof value;
  return { path: '', message: `the body must be ${expected}`, expected, received };
}
