/**
 * Usage answers as text: JSON (measures are exact integers, written as JSON numbers however large)
 * and CSV (a header of the row property names, then one line per row). Shared by the API and CLI.
 */
import type { ReconcileRequest, UsageRequest } from './params.js';
import type { Difference, ReconcileDay, UsagePage } from './service.js';
import { MEASURES } from './shapes.js';

export const utc = (seconds: number): string => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
const day = (d: number): string => utc(d * 86400).slice(0, 10);

/** JSON.stringify, except that bigints are written as integers. */
function json(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `\u0000${v}` : v)).replace(/"\\u0000(-?\d+)"/g, '$1');
}

export function usageJson(request: UsageRequest, page: UsagePage): string {
  return json({
    from: utc(request.from),
    to: utc(request.to),
    granularity: request.granularity,
    timeZone: request.timeZone,
    groupBy: request.groupBy,
    rows: page.rows.map((row) => {
      const out: Record<string, unknown> = { start: utc(row.start), end: utc(row.end) };
      request.groupBy.forEach((d, i) => (out[d] = row.values[i]));
      MEASURES.forEach((m, i) => (out[m] = row.measures[i]));
      return out;
    }),
    nextCursor: page.nextCursor,
  });
}

const csvCell = (value: string | null): string => (value === null ? '' : /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

/** CSV (RFC 4180); an empty cell is a dimension the events had none of. */
export function usageCsv(request: UsageRequest, page: UsagePage): string {
  const lines = [['start', 'end', ...request.groupBy, ...MEASURES].join(',')];
  for (const row of page.rows) lines.push([utc(row.start), utc(row.end), ...row.values.map(csvCell), ...row.measures.map(String)].join(','));
  return lines.join('\r\n') + '\r\n';
}

export function reconcileJson(request: ReconcileRequest, result: { days: ReconcileDay[]; differences: Difference[] }): string {
  return json({
    from: utc(request.from),
    to: utc(request.to),
    days: result.days.map((d) => ({ day: day(d.day), ...d.receipts, storedByArrival: d.storedByArrival, requests: d.requests, rollupRequests: d.rollupRequests })),
    differences: result.differences.map((d) => ({ ...d, day: day(d.day) })),
  });
}
