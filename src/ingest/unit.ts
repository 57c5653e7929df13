/**
 * Items → commit unit: the one place that turns a list of inputs into events to store and entries
 * to quarantine. Ingestion (a batch body) and quarantine replay (a kept input, run again) both use
 * it, so both keep the same rules: what is stored, what is kept, and how much of it.
 */
import type { ErrorCode, RefusalCode } from '../errors.js';
import type { FieldError } from '../events/field-error.js';
import type { EventValidator } from '../events/validate.js';
import type { CommitUnit, QuarantineInput } from '../store/types.js';

export interface UnitSource {
  tenantId: number;
  /** When the items were received: the clock that decides "too far in the future". */
  receivedAt: number;
  /** Route they came in on, e.g. `POST /s3/batch`. */
  source: string;
  /** The body the items came in, kept for an item too deeply nested to serialize again. */
  body: Buffer;
  /** Most bytes of one input kept in quarantine. */
  quarantineMaxBytes: number;
}

export interface ItemsUnit {
  unit: CommitUnit;
  /** The invalid items, by index, with their errors (the unit's quarantine entries, in order). */
  rejected: { index: number; errors: FieldError[] }[];
}

/** Validates each item: the valid ones become the unit's events, the invalid ones its quarantine entries. */
export function itemsToUnit(items: readonly unknown[], from: UnitSource, validator: EventValidator): ItemsUnit {
  const { tenantId, receivedAt } = from;
  const unit: CommitUnit = { events: [], quarantine: [] };
  const rejected: ItemsUnit['rejected'] = [];
  let bodyKeptAt: number | undefined;
  for (let index = 0; index < items.length; index++) {
    const item: unknown = items[index];
    const result = validator.validate(item, receivedAt);
    if (result.ok) {
      unit.events.push({ tenantId, receivedAt, event: result.event });
      continue;
    }
    rejected.push({ index, errors: result.errors });
    let kept = serializeItem(item);
    if (kept === undefined) {
      // Too deeply nested to serialize again: keep the raw body it came in, once per body.
      kept = bodyKeptAt === undefined ? from.body : Buffer.from(JSON.stringify({ sameBodyAsIndex: bodyKeptAt }));
      bodyKeptAt ??= index;
    }
    unit.quarantine.push(quarantineEntry(from, rejectionCode(result), result.errors, kept, index));
  }
  return { unit, rejected };
}

/** One input kept in quarantine, cut to the configured bound (and marked so). */
export function quarantineEntry(from: UnitSource, code: ErrorCode, errors: FieldError[], body: Buffer, index?: number): QuarantineInput {
  const max = from.quarantineMaxBytes;
  const truncated = body.length > max;
  return {
    tenantId: from.tenantId,
    receivedAt: from.receivedAt,
    code,
    errors,
    source: from.source,
    ...(index === undefined ? {} : { index }),
    body: truncated ? Buffer.from(body.subarray(0, max)) : body,
    truncated,
  };
}

/** The code an invalid event is answered and quarantined with: unmapped ones get their own, to be found and counted. */
export function rejectionCode(result: { unmapped: boolean }): RefusalCode {
  return result.unmapped ? 'BM_ERR_EVENT_UNMAPPED' : 'BM_ERR_EVENT_INVALID';
}

/** An item's JSON for quarantine, or undefined when it nests too deeply for JSON.stringify. */
function serializeItem(item: unknown): Buffer | undefined {
  try {
    return Buffer.from(JSON.stringify(item) ?? 'null');
  } catch {
    return undefined;
  }
}
