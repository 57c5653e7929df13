/**
 * Usage answers as text: JSON (measures are exact integers, written as JSON numbers however large)
 * and CSV (a header of the row property names, then one line per row). Shared by the API and CLI.
 */
import type { ReconcileRequest, UsageRequest } from './params.js';
import type { Difference, ReconcileDay, UsagePage } from './service.js';
import { MEASURES } from './shapes.js';
import { STORAGE_MEASURES, byteHours } from '../inventory/measures.js';

/** The measure names of a request's rows, in their order. */
const measureNames = (request: UsageRequest): readonly string[] => (request.storage ? [...MEASURES, ...STORAGE_MEASURES] : MEASURES);
/** Where storedByteHours (carried as byte-seconds) sits in a storage row. */
const BYTE_HOURS = MEASURES.length;
const measureText = (request: UsageRequest, i: number, value: bigint): string => (request.storage && i === BYTE_HOURS ? byteHours(value) : value.toString());

export const utc = (seconds: number): string => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
const day = (d: number): string => utc(d * 86400).slice(0, 10);

/** JSON.stringify, except that bigints are written as integers. */
function json(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `\u0000${v}` : v)).replace(/"\\u0000(-?\d+)"/g, '$1');
}

/** Written row by row (answers run to 100,000 rows): property names once, each window's times once. */
export function usageJson(request: UsageRequest, page: UsagePage): string {
  const head = JSON.stringify({ from: utc(request.from), to: utc(request.to), granularity: request.granularity, timeZone: request.timeZone, groupBy: request.groupBy });
  const dims = request.groupBy.map((d) => `,${JSON.stringify(d)}:`);
  const measures = measureNames(request).map((m) => `,${JSON.stringify(m)}:`);
  const times = new Map<number, string>();
  const time = (seconds: number) => {
    let text = times.get(seconds);
    if (text === undefined) {
      text = `"${utc(seconds)}"`;
      times.set(seconds, text);
    }
    return text;
  };
  const rows = page.rows.map((row) => {
    let out = `{"start":${time(row.start)},"end":${time(row.end)}`;
    for (let i = 0; i < dims.length; i++) out += dims[i]! + JSON.stringify(row.values[i]);
    for (let i = 0; i < measures.length; i++) out += measures[i]! + measureText(request, i, row.measures[i]!);
    return out + '}';
  });
  return `${head.slice(0, -1)},"rows":[${rows.join(',')}],"nextCursor":${JSON.stringify(page.nextCursor)}}`;
}

const csvCell = (value: string | null): string => (value === null ? '' : /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

/** CSV (RFC 4180); an empty cell is a dimension the events had none of. */
export function usageCsv(request: UsageRequest, page: UsagePage): string {
  const lines = [['start', 'end', ...request.groupBy, ...measureNames(request)].join(',')];
  const window = new Map<number, string>();
  for (const row of page.rows) {
    let times = window.get(row.start);
    if (times === undefined) {
      times = `${utc(row.start)},${utc(row.end)}`;
      window.set(row.start, times);
    }
    lines.push([times, ...row.values.map(csvCell), ...row.measures.map((m, i) => measureText(request, i, m))].join(','));
  }
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
