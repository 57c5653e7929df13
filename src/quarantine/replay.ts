/**
 * Runs quarantined inputs through today's validation again (after an upgrade that accepts them).
 * What now passes goes through the committer like any ingested input, with the entry marked
 * replayed in the same transaction, so a crash mid-replay can never store an event twice; what
 * still fails stays in quarantine.
 */
import type { EventValidator } from '../events/validate.js';
import type { Committer } from '../ingest/committer.js';
import { decodeJson } from '../ingest/service.js';
import { itemsToUnit } from '../ingest/unit.js';
import type { ItemsUnit } from '../ingest/unit.js';
import type { QuarantineEntry, QuarantineStore } from '../store/types.js';

export interface ReplayResult {
  examined: number;
  /** Entries whose content is now stored. */
  replayed: number;
  /** Events stored (a replayed batch body can hold many). */
  events: number;
  /** Events that now pass but whose eventId was already stored: not stored again. */
  duplicates: number;
  stillInvalid: number;
}

export interface ReplayOptions {
  quarantine: Pick<QuarantineStore, 'list'>;
  committer: Pick<Committer, 'submit'>;
  validator: EventValidator;
  /** Most bytes of one input kept in quarantine (a batch body's still-invalid items are kept anew). */
  quarantineMaxBytes: number;
  tenantId?: number;
  /** Unix seconds: the replayed mark. */
  now?: number;
}

const PAGE = 200;

export async function replayQuarantine(options: ReplayOptions): Promise<ReplayResult> {
  const result: ReplayResult = { examined: 0, replayed: 0, events: 0, duplicates: 0, stillInvalid: 0 };
  const at = options.now ?? Math.floor(Date.now() / 1000);
  let afterId = 0;
  for (;;) {
    const entries = await options.quarantine.list({ afterId, limit: PAGE, includeReplayed: false, ...(options.tenantId === undefined ? {} : { tenantId: options.tenantId }) });
    if (entries.length === 0) return result;
    afterId = entries[entries.length - 1]!.id;
    for (const entry of entries) {
      result.examined++;
      const retried = retry(entry, options);
      if (retried === undefined) {
        result.stillInvalid++;
        continue;
      }
      const outcomes = await options.committer.submit({ ...retried.unit, replayed: { ids: [entry.id], at } });
      result.replayed++;
      for (const outcome of outcomes) {
        if (outcome.duplicate) result.duplicates++;
        else result.events++;
      }
    }
  }
}

/**
 * The unit an entry yields now, or undefined when it still does not pass. A whole batch body that now
 * parses is split: its valid events are stored and its invalid ones become entries of their own.
 */
function retry(entry: QuarantineEntry, options: ReplayOptions): ItemsUnit | undefined {
  if (entry.truncated) return undefined;
  const decoded = decodeJson(entry.body);
  if (!decoded.ok) return undefined;
  const isBatch = Array.isArray(decoded.value) && entry.index === undefined;
  const items: unknown[] = isBatch ? (decoded.value as unknown[]) : [decoded.value];
  // The clock of the original receipt decides "too far in the future", as it did then.
  const from = { tenantId: entry.tenantId, receivedAt: entry.receivedAt, source: entry.source, body: entry.body, quarantineMaxBytes: options.quarantineMaxBytes };
  const retried = itemsToUnit(items, from, options.validator);
  if (retried.unit.events.length === 0) return undefined;
  // A single input that still fails stays the entry it is; only a batch body's items become new entries.
  if (!isBatch) retried.unit.quarantine = [];
  return retried;
}
