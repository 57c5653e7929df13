/**
 * Cost answers as text: JSON and CSV (rows as /v1/usage writes them, amounts as decimal strings),
 * and the FinOps FOCUS CSV of the fine rows, one per hour (src/pricing/focus.ts). Shared by the API and the CLI.
 */
import { monthBounds, rowsOf } from '../pricing/engine.js';
import { focusHeader, focusLine } from '../pricing/focus.js';
import type { UsageRequest } from '../usage/params.js';
import { utc } from '../usage/format.js';
import type { CostPage, CostRowOut, PricedAccount } from './service.js';

export const COST_COLUMNS = ['storageCost', 'requestCost', 'egressCost', 'otherCost', 'totalCost'] as const;

/** planId is a row property (and a group key) where the groupBy holds provider or bucket. */
export const withPlan = (request: Pick<UsageRequest, 'groupBy'>): boolean => request.groupBy.includes('provider') || request.groupBy.includes('bucket');

/** The row properties in order, after start and end. */
export function costFields(request: Pick<UsageRequest, 'groupBy'>): string[] {
  return [...request.groupBy, ...(withPlan(request) ? ['planId'] : []), 'currency', ...COST_COLUMNS, 'unallocated', 'unpriced'];
}

function values(request: Pick<UsageRequest, 'groupBy'>, row: CostRowOut): (string | boolean | null)[] {
  return [
    ...request.groupBy.map((d) => row.dimensions[d] ?? null),
    ...(withPlan(request) ? [row.planId] : []),
    row.currency,
    ...COST_COLUMNS.map((c) => row[c]),
    row.unallocated,
    row.unpriced,
  ];
}

export function costJson(request: UsageRequest, page: CostPage): string {
  const head = JSON.stringify({ from: utc(request.from), to: utc(request.to), granularity: request.granularity, timeZone: request.timeZone, groupBy: request.groupBy });
  const names = costFields(request).map((f) => `,${JSON.stringify(f)}:`);
  const plan = withPlan(request);
  // A window's bounds as text once, not per row (an answer has a few windows and thousands of rows).
  const times = new Map<number, string>();
  const time = (s: number) => {
    let t = times.get(s);
    if (t === undefined) {
      t = utc(s);
      times.set(s, t);
    }
    return t;
  };
  const text = (v: string | null) => (v === null ? 'null' : JSON.stringify(v));
  const rows = page.rows.map((row) => {
    let out = `{"start":"${time(row.start)}","end":"${time(row.end)}"`;
    let k = 0;
    for (const d of request.groupBy) out += names[k++]! + text(row.dimensions[d] ?? null);
    if (plan) out += names[k++]! + text(row.planId);
    out += names[k++]! + text(row.currency);
    // Amounts are digits, a point and perhaps a sign: nothing to escape.
    for (const c of COST_COLUMNS) out += `${names[k++]!}"${row[c]}"`;
    out += `${names[k++]!}${row.unallocated}${names[k++]!}${row.unpriced}}`;
    return out;
  });
  return `${head.slice(0, -1)},"rows":[${rows.join(',')}],"nextCursor":${JSON.stringify(page.nextCursor)}}`;
}

const csvCell = (value: string | boolean | null): string => (value === null ? '' : typeof value === 'boolean' ? String(value) : /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

export function costCsv(request: UsageRequest, page: CostPage): string {
  const lines = [['start', 'end', ...costFields(request)].join(',')];
  for (const row of page.rows) lines.push([utc(row.start), utc(row.end), ...values(request, row).map(csvCell)].join(','));
  return lines.join('\r\n') + '\r\n';
}

/** FOCUS CSV of the fine rows: the tenant is the billing account at each provider, billed by calendar month. */
export function* costFocus(tenantName: string, accounts: readonly PricedAccount[]): Generator<string> {
  yield focusHeader();
  for (const a of accounts) {
    const { start, end } = monthBounds(a.month);
    const ctx = { provider: a.provider, billingAccountId: tenantName, billingAccountName: tenantName, billingPeriodStart: start, billingPeriodEnd: end };
    // FOCUS rows are hourly charges: a run is written as each of its hours.
    for (let i = 0; i < a.priced.length; i++) for (const one of rowsOf(a.priced.rowAt(i))) yield focusLine(one, ctx);
  }
}

const CHUNK_CHARS = 64 * 1024;

/** Lines joined into chunks of about 64 KiB: a stream of one short string per line costs more than the lines. */
export function* inChunks(lines: Iterable<string>): Generator<string> {
  let chunk = '';
  for (const line of lines) {
    chunk += line;
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk !== '') yield chunk;
}
