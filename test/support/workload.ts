/**
 * What the usage and cost suites share to drive a server with generated events and query it: the
 * shape of a generated event, a seeded arrival order, the query string of a reference query and
 * the delivery in batches.
 */
import assert from 'node:assert/strict';
import type { RefQuery } from '../usage/reference.js';
import type { WireEvent } from './events.js';
import { request } from './server.js';

export const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');

/** One generated event before it is written as the wire sees it (each suite has its own `wire`). */
export interface WorkloadSpec {
  action: string;
  timestamp: number;
  provider: string;
  bucket: string;
  customerId?: string;
  featureId?: string;
  clientType?: string;
  clientId?: string;
  bytes: number;
  billable?: boolean;
  withId: boolean;
  invalid: boolean;
}

/** A seeded shuffle: an arrival order. */
export function shuffle<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let s = seed >>> 0;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The query string of /v1/usage or /v1/costs for a reference query. */
export function queryString(q: RefQuery, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams({ from: iso(q.from), to: iso(q.to), granularity: q.granularity, timeZone: q.timeZone, ...extra });
  if (q.groupBy.length > 0) params.set('groupBy', q.groupBy.join(','));
  for (const [d, values] of Object.entries(q.filters)) for (const v of values!) params.append(d, v);
  return params.toString();
}

/** Sends the events in batches of `batch` (one alone goes to /s3): each answered 200, or 400 for an invalid one. */
export async function send(url: string, key: string, events: WireEvent[], batch: number): Promise<void> {
  for (let i = 0; i < events.length; i += batch) {
    const chunk = events.slice(i, i + batch);
    const reply = chunk.length === 1 ? await request(`${url}/s3`, { key, body: chunk[0] }) : await request(`${url}/s3/batch`, { key, body: chunk });
    assert.ok(reply.status === 200 || reply.status === 400, reply.text);
  }
}
