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

/** Each window's times as text, made once per window the page uses. */
function windowTexts(page: UsagePage, text: (start: number, end: number) => string): (i: number) => string {
  const made = new Map<number, string>();
  return (w) => {
    let t = made.get(w);
    if (t === undefined) {
      t = text(page.bounds[w]! * 3600, page.bounds[w + 1]! * 3600);
      made.set(w, t);
    }
    return t;
  };
}

/**
 * Text written into one growing buffer, a row at a time: an answer of 30,000 rows built as strings
 * and joined took twice as long (rope flattening, then a copy into the socket's buffer).
 */
class TextBuffer {
  #buf = Buffer.allocUnsafe(1 << 16);
  #at = 0;

  write(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    if (this.#at + text.length * 3 > this.#buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#at + text.length * 3));
      this.#buf.copy(grown, 0, 0, this.#at);
      this.#buf = grown;
    }
    this.#at += this.#buf.write(text, this.#at);
  }

  done(): Buffer {
    return this.#buf.subarray(0, this.#at);
  }
}

/**
 * Written straight from the columns (answers run to 100,000 rows a page): property names once,
 * each window's times and each dimension value's JSON once, then each row into one buffer.
 */
export function usageJson(request: UsageRequest, page: UsagePage): Buffer {
  const head = JSON.stringify({ from: utc(request.from), to: utc(request.to), granularity: request.granularity, timeZone: request.timeZone, groupBy: request.groupBy });
  const { columns, order } = page;
  const dims = request.groupBy.map((d, g) => ({ name: `,${JSON.stringify(d)}:`, values: columns.values[g]!, text: columns.labels[g]!.map((v) => JSON.stringify(v)) }));
  const measures = measureNames(request).map((m, i) => ({ name: `,${JSON.stringify(m)}:`, column: columns.measures[i]!, i }));
  const times = windowTexts(page, (start, end) => `{"start":"${utc(start)}","end":"${utc(end)}"`);
  const out = new TextBuffer();
  out.write(`${head.slice(0, -1)},"rows":[`);
  for (let j = 0; j < order.length; j++) {
    const r = order[j]!;
    let row = j === 0 ? times(columns.window[r]!) : `,${times(columns.window[r]!)}`;
    for (const d of dims) row += d.name + d.text[d.values[r]!]!;
    for (const m of measures) row += m.name + measureText(request, m.i, m.column[r]!);
    out.write(row + '}');
  }
  out.write(`],"nextCursor":${JSON.stringify(page.nextCursor)}}`);
  return out.done();
}

const csvCell = (value: string | null): string => (value === null ? '' : /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

/** CSV (RFC 4180), written from the columns as JSON is; an empty cell is a dimension the events had none of. */
export function usageCsv(request: UsageRequest, page: UsagePage): string {
  const { columns, order } = page;
  const cells = columns.labels.map((labels) => labels.map((v) => `,${csvCell(v)}`));
  const names = measureNames(request);
  const times = windowTexts(page, (start, end) => `${utc(start)},${utc(end)}`);
  const lines = new Array<string>(order.length + 1);
  lines[0] = ['start', 'end', ...request.groupBy, ...names].join(',');
  for (let j = 0; j < order.length; j++) {
    const r = order[j]!;
    let out = times(columns.window[r]!);
    for (let g = 0; g < cells.length; g++) out += cells[g]![columns.values[g]![r]!]!;
    for (let m = 0; m < names.length; m++) out += `,${measureText(request, m, columns.measures[m]![r]!)}`;
    lines[j + 1] = out;
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
