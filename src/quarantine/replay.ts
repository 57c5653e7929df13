/**
 * Runs quarantined inputs through today's validation again (after an upgrade that accepts them).
 * What now passes is stored and its entry marked replayed in the same transaction, so a crash
 * mid-replay can never store an event twice; what still fails stays in quarantine.
 */
import type { EventValidator } from '../events/validate.js';
import { decodeJson, rejectionCode, serializeItem } from '../ingest/service.js';
import type { EventToStore, QuarantineEntry, QuarantineInput, Store } from '../store/types.js';

export interface ReplayResult {
  examined: number;
  /** Entries whose content is now stored. */
  replayed: number;
  /** Events stored (a replayed batch body can hold many). */
  events: number;
  stillInvalid: number;
}

const PAGE = 200;

export async function replayQuarantine(store: Store, validator: EventValidator, options: { tenantId?: number; now?: number } = {}): Promise<ReplayResult> {
  const result: ReplayResult = { examined: 0, replayed: 0, events: 0, stillInvalid: 0 };
  const at = options.now ?? Math.floor(Date.now() / 1000);
  let afterId = 0;
  for (;;) {
    const entries = await store.quarantine.list({ afterId, limit: PAGE, includeReplayed: false, ...(options.tenantId === undefined ? {} : { tenantId: options.tenantId }) });
    if (entries.length === 0) return result;
    afterId = entries[entries.length - 1]!.id;
    for (const entry of entries) {
      result.examined++;
      const outcome = retry(entry, validator);
      if (outcome === undefined) {
        result.stillInvalid++;
        continue;
      }
      await store.commit({ events: outcome.events, quarantine: outcome.quarantine, replayed: { ids: [entry.id], at } });
      result.replayed++;
      result.events += outcome.events.length;
    }
  }
}

/**
 * The events an entry yields now, or undefined when it still does not pass. A whole batch body that
 * now parses is split: its valid events are stored and its invalid ones become entries of their own.
 */
function retry(entry: QuarantineEntry, validator: EventValidator): { events: EventToStore[]; quarantine: QuarantineInput[] } | undefined {
  if (entry.truncated) return undefined;
  const decoded = decodeJson(entry.body);
  if (!decoded.ok) return undefined;
  const { tenantId, receivedAt } = entry;
  const isBatch = Array.isArray(decoded.value) && entry.index === undefined;
  const items: unknown[] = isBatch ? (decoded.value as unknown[]) : [decoded.value];
  const events: EventToStore[] = [];
  const quarantine: QuarantineInput[] = [];
  items.forEach((item, index) => {
    // The clock of the original receipt decides "too far in the future", as it did then.
    const result = validator.validate(item, receivedAt);
    if (result.ok) events.push({ tenantId, receivedAt, event: result.event });
    else quarantine.push({ tenantId, receivedAt, code: rejectionCode(result), errors: result.errors, source: entry.source, index, body: serializeItem(item) ?? entry.body, truncated: false });
  });
  if (events.length === 0) return undefined;
  return { events, quarantine: isBatch ? quarantine : [] };
}
