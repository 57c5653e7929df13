/** `bucketmeter costs`: the GET /v1/costs answer for a tenant (every page), as a table, CSV, JSON or FOCUS CSV. */
import { COST_COLUMNS, costCsv, costFields, costFocus, costJson } from '../costs/format.js';
import type { CostRowOut } from '../costs/service.js';
import { CostService } from '../costs/service.js';
import type { Pricing } from '../pricing/setup.js';
import type { Store } from '../store/types.js';
import { utc } from '../usage/format.js';
import { parseUsageParams } from '../usage/params.js';
import { DIMENSIONS } from '../usage/shapes.js';
import { printTable } from './table.js';
import type { Values } from './usage.js';
import { apiParams, CliUsageError, withParams } from './usage.js';

export async function costsCommand(store: Store, pricing: Pricing, values: Values, tenantId: (name: string) => Promise<number>): Promise<number> {
  const tenant = values.tenant as string | undefined;
  if (tenant === undefined) throw new CliUsageError('costs needs --tenant NAME');
  const id = await tenantId(tenant);
  const service = new CostService({ usage: store.usage, storage: store.storageFeed, pricing });
  const format = values.focus === true ? 'focus' : values.csv === true ? 'csv' : 'json';
  const params = apiParams(values, ['from', 'to', 'granularity', 'timeZone', 'groupBy', ...DIMENSIONS]);
  const request = await withParams(async () => parseUsageParams({ ...params, format }, undefined, ['json', 'csv', 'focus']));
  if (format === 'focus') {
    for (const line of costFocus(tenant, await withParams(() => service.fineRows(id, request)))) process.stdout.write(line);
    return 0;
  }
  const rows: CostRowOut[] = [];
  let cursor: string | null = null;
  do {
    const page = await withParams(() => service.query(id, cursor === null ? request : { ...request, cursor: cursor! }));
    rows.push(...page.rows);
    cursor = page.nextCursor;
  } while (cursor !== null);
  const all = { rows, nextCursor: null };
  if (values.csv === true) process.stdout.write(costCsv(request, all));
  else if (values.json === true) process.stdout.write(costJson(request, all) + '\n');
  else {
    const fields = costFields(request);
    const cell = (r: CostRowOut, f: string) => {
      if (f === 'unallocated' || f === 'unpriced') return r[f] ? 'yes' : '';
      const v = f === 'planId' ? r.planId : f === 'currency' ? r.currency : (COST_COLUMNS as readonly string[]).includes(f) ? r[f as (typeof COST_COLUMNS)[number]] : r.dimensions[f];
      return v ?? '-';
    };
    printTable(['START', 'END', ...fields], rows.map((r) => [utc(r.start), utc(r.end), ...fields.map((f) => cell(r, f))]));
  }
  return 0;
}
