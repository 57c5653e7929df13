/**
 * The reference: usage computed slowly and independently from the events as sent, one event at a
 * time, with windows found by formatting each timestamp in the zone (Intl), not by the server's
 * window arithmetic. Exactly-once and quarantine are modelled by arrival order: the first valid
 * copy of an eventId counts, later ones and invalid events do not.
 */
import type { WireEvent } from '../support/events.js';

export const DIMS = ['provider', 'bucket', 'customerId', 'featureId', 'clientType', 'clientId', 'action'] as const;
export type Dim = (typeof DIMS)[number];
export const MEASURE_NAMES = ['requests', 'readBytes', 'billableEgressBytes', 'writtenBytes'] as const;

export interface RefEvent {
  timestamp: number;
  dims: Record<Dim, string | null>;
  measures: bigint[];
}

/** The events that count, from what was sent in order (`valid` says which the server accepts). */
export function countedEvents(sent: { event: WireEvent; valid: boolean }[]): RefEvent[] {
  const seen = new Set<string>();
  const out: RefEvent[] = [];
  for (const { event, valid } of sent) {
    if (!valid) continue;
    const id = event.eventId as string | undefined;
    if (id !== undefined) {
      if (seen.has(id)) continue;
      seen.add(id);
    }
    const action = event.action as string;
    const bytes = BigInt((event.bytes as number | undefined) ?? 0);
    const read = action === 'GetObject' ? bytes : 0n;
    const egress = action === 'GetObject' && event.isBillableEgress !== false ? bytes : 0n;
    const written = ['PutObject', 'PostObject', 'UploadPart', 'UploadPartCopy'].includes(action) ? bytes : 0n;
    const dims = {} as Record<Dim, string | null>;
    for (const d of DIMS) dims[d] = (event[d] as string | undefined) ?? null;
    dims.provider = dims.provider!.toLowerCase();
    out.push({ timestamp: Date.parse(event.timestamp as string) / 1000, dims, measures: [1n, read, egress, written] });
  }
  return out;
}

const parts = (zone: string, seconds: number): Record<string, string> => {
  const f = new Intl.DateTimeFormat('en-CA', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' });
  return Object.fromEntries(f.formatToParts(new Date(seconds * 1000)).map((p) => [p.type, p.value]));
};

/** The label of the window an instant falls in: its UTC hour, local day or local month, or 'all'. */
export function windowLabel(granularity: string, zone: string, seconds: number): string {
  if (granularity === 'none') return 'all';
  if (granularity === 'hour') return new Date(Math.floor(seconds / 3600) * 3600_000).toISOString();
  const p = parts(zone, seconds);
  return granularity === 'day' ? `${p.year}-${p.month}-${p.day}` : `${p.year}-${p.month}`;
}

/** Whether an instant is the local start of a window of this granularity. */
export function isWindowStart(granularity: string, zone: string, seconds: number): boolean {
  if (granularity === 'hour') return seconds % 3600 === 0;
  const p = parts(zone, seconds);
  return p.hour === '00' && p.minute === '00' && (granularity === 'day' || p.day === '01');
}

export interface RefQuery {
  from: number;
  to: number;
  granularity: string;
  timeZone: string;
  groupBy: Dim[];
  filters: Partial<Record<Dim, string[]>>;
}

/** label|values (JSON) → measures, for every window and group with a non-zero measure. */
export function reference(events: RefEvent[], q: RefQuery): Map<string, bigint[]> {
  const out = new Map<string, bigint[]>();
  for (const e of events) {
    if (e.timestamp < q.from || e.timestamp >= q.to) continue;
    const matches = Object.entries(q.filters).every(([d, values]) => values!.some((v) => (v === '' ? e.dims[d as Dim] === null : e.dims[d as Dim] === v)));
    if (!matches) continue;
    const key = `${windowLabel(q.granularity, q.timeZone, e.timestamp)}|${JSON.stringify(q.groupBy.map((d) => e.dims[d]))}`;
    const sum = out.get(key) ?? [0n, 0n, 0n, 0n];
    out.set(key, sum.map((v, i) => v + e.measures[i]!));
  }
  return out;
}
