/**
 * The event log, counted: wraps a store's EventLog so that every commit is timed and sized, and its
 * events counted by tenant, kind and outcome once they are durable. Backends know nothing of metrics.
 */
import { KINDS, actionByCode, isActionName } from '../events/catalogue.js';
import type { CommitUnit, EventLog, EventOutcome } from '../store/types.js';
import { InvalidCursorError, ReadAbortedError } from '../store/types.js';
import type { Metrics } from './metrics.js';

/** The labels of a unit's items, taken before the commit so that the wrapper keeps none of its events alive. */
interface UnitLabels {
  tenants: Int32Array;
  /** Kind codes (catalogue), one byte each. */
  kinds: Uint8Array;
  quarantined: { tenant: string; code: string; action: string | undefined }[];
}

export function instrumentEventLog(log: EventLog, metrics: Metrics): EventLog {
  return {
    async commit(unit: CommitUnit, deadline?: number): Promise<EventOutcome[]> {
      const labels = labelsOf(unit);
      metrics.commitEvents.observe(unit.events.length + unit.quarantine.length);
      const stop = metrics.commitDuration.startTimer();
      let outcomes: EventOutcome[];
      try {
        outcomes = await log.commit(unit, deadline);
      } catch (error) {
        metrics.storeErrors.inc({ operation: 'commit' });
        throw error;
      } finally {
        stop();
      }
      count(metrics, labels, outcomes);
      return outcomes;
    },
    async listEvents(tenantId, query, signal) {
      try {
        return await log.listEvents(tenantId, query, signal);
      } catch (error) {
        // A cursor not made by this store is the client's mistake, not the store's; a read whose client left is no failure.
        if (!(error instanceof InvalidCursorError) && !(error instanceof ReadAbortedError)) metrics.storeErrors.inc({ operation: 'list' });
        throw error;
      }
    },
  };
}

/** Codes of an event refused on its own (invalid, or a kind its collector could not map). */
const EVENT_CODES = new Set(['BM_ERR_EVENT_INVALID', 'BM_ERR_EVENT_UNMAPPED']);

function labelsOf(unit: CommitUnit): UnitLabels {
  const n = unit.events.length;
  const tenants = new Int32Array(n);
  const kinds = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const e = unit.events[i]!;
    tenants[i] = e.tenantId;
    kinds[i] = KINDS[e.event.action].code;
  }
  const quarantined = unit.quarantine.map((q) => ({
    tenant: String(q.tenantId),
    code: q.code,
    // Only an event refused on its own is an event; a whole body refused is not counted as one.
    action: EVENT_CODES.has(q.code) ? claimedAction(q.body, q.truncated) : undefined,
  }));
  return { tenants, kinds, quarantined };
}

/** The kind an invalid event claimed to be, when it named a known one; rejections are rare enough to parse. */
function claimedAction(body: Buffer, truncated: boolean): string {
  if (truncated) return 'unknown';
  try {
    const action = (JSON.parse(body.toString('utf8')) as { action?: unknown } | null)?.action;
    return isActionName(action) ? action : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** One increment per (tenant, kind, outcome), not per event: a commit holds up to thousands. */
function count(metrics: Metrics, labels: UnitLabels, outcomes: EventOutcome[]): void {
  const totals = new Map<number, number>();
  for (let i = 0; i < outcomes.length; i++) {
    const key = (labels.tenants[i]! * 256 + labels.kinds[i]!) * 2 + (outcomes[i]!.duplicate ? 1 : 0);
    totals.set(key, (totals.get(key) ?? 0) + 1);
  }
  for (const [key, n] of totals) {
    const duplicate = key % 2 === 1;
    const kind = Math.floor(key / 2) % 256;
    const tenant = Math.floor(key / 512);
    metrics.events.inc({ tenant: String(tenant), action: actionByCode(kind) ?? 'unknown', outcome: duplicate ? 'duplicate' : 'accepted' }, n);
  }
  for (const q of labels.quarantined) {
    metrics.quarantineEntries.inc({ tenant: q.tenant, code: q.code });
    if (q.action !== undefined) metrics.events.inc({ tenant: q.tenant, action: q.action, outcome: 'rejected' });
  }
}
