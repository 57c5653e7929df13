/**
 * `bucketmeter usage [verify | rebuild]`: the usage API's parameters as flags (same names), answered
 * by the same service straight from the store. verify exits 1 on any difference.
 */
import { BmError } from '../errors.js';
import type { Store } from '../store/types.js';
import { reconcileJson, usageCsv, usageJson, utc } from '../usage/format.js';
import { parseRangeParams, parseUsageParams } from '../usage/params.js';
import { pageRows, UsageService } from '../usage/service.js';
import { DIMENSIONS, MEASURES } from '../usage/shapes.js';
import { printTable } from './table.js';
import { STORAGE_MEASURES, byteHours } from '../inventory/measures.js';

/** parseArgs options: the API's parameter names, filters repeatable. */
export const USAGE_FLAGS = {
  from: { type: 'string' },
  to: { type: 'string' },
  granularity: { type: 'string' },
  timeZone: { type: 'string' },
  groupBy: { type: 'string' },
  storage: { type: 'string' },
  csv: { type: 'boolean' },
  json: { type: 'boolean' },
  focus: { type: 'boolean' },
  ...Object.fromEntries(DIMENSIONS.map((d) => [d, { type: 'string', multiple: true }])),
} as const;

export class CliUsageError extends Error {}

export type Values = Record<string, string | boolean | string[] | undefined>;

/** The API's query from flags: only the parameters the API knows. */
export function apiParams(values: Values, names: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(names.filter((n) => values[n] !== undefined).map((n) => [n, values[n]]));
}

/** Runs `run`, printing a refused parameter set as the API would name it. */
export async function withParams<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof BmError && err.extra.errors !== undefined) {
      throw new CliUsageError(`${err.message}\n${err.extra.errors.map((e) => `  --${e.path.slice(1)}: ${e.message} (expected ${e.expected}, got ${e.received})`).join('\n')}`);
    }
    if (err instanceof BmError) throw new CliUsageError(err.message);
    throw err;
  }
}

export async function usageCommand(store: Store, sub: string | undefined, values: Values, tenantIds: (name: string | undefined) => Promise<number[]>): Promise<number> {
  const service = new UsageService(store.usage, store.inventory);
  const tenant = values.tenant as string | undefined;
  switch (sub) {
    case undefined: {
      if (tenant === undefined) throw new CliUsageError('usage needs --tenant NAME');
      const [tenantId] = await tenantIds(tenant);
      const params = apiParams(values, ['from', 'to', 'granularity', 'timeZone', 'groupBy', 'storage', ...DIMENSIONS]);
      const request = await withParams(async () => parseUsageParams({ ...params, format: values.csv === true ? 'csv' : 'json' }));
      // The whole answer at once: the CLI prints every row, so pages would only compute it again.
      const all = await withParams(() => service.query(tenantId!, { ...request, limit: Number.MAX_SAFE_INTEGER }));
      if (values.csv === true) process.stdout.write(usageCsv(request, all));
      else if (values.json === true) process.stdout.write(Buffer.concat([usageJson(request, all), Buffer.from('\n')]));
      else {
        const names = request.storage ? [...MEASURES, ...STORAGE_MEASURES] : MEASURES;
        const text = (m: bigint, i: number) => (i === MEASURES.length ? byteHours(m) : String(m));
        printTable(['START', 'END', ...request.groupBy, ...names], pageRows(all).map((r) => [utc(r.start), utc(r.end), ...r.values.map((v) => v ?? '-'), ...r.measures.map(text)]));
      }
      return 0;
    }
    case 'verify': {
      const request = await withParams(async () => parseRangeParams(apiParams(values, ['from', 'to'])));
      let differences = 0;
      for (const tenantId of await tenantIds(tenant)) {
        const result = await service.reconcile(tenantId, request);
        differences += result.differences.length;
        if (result.differences.length > 0) process.stdout.write(`tenant ${tenantId}: ${reconcileJson(request, result)}\n`);
      }
      // The inventory is checked whole (its entries span any range): replayed from every event in memory.
      for (const tenantId of tenant === undefined ? [null] : await tenantIds(tenant)) {
        const found = await store.inventory.verify(tenantId);
        differences += found.length;
        for (const d of found.slice(0, 20)) process.stdout.write(`tenant ${d.tenantId}: inventory ${d.check}: expected ${d.expected}, got ${d.actual}\n`);
      }
      process.stdout.write(
        differences === 0
          ? 'usage verified: receipts, events, rollups and the object inventory agree\n'
          : `${differences} difference(s); \`bucketmeter usage rebuild\` recomputes rollups and the inventory from the events\n`,
      );
      return differences === 0 ? 0 : 1;
    }
    case 'rebuild': {
      const request = await withParams(async () => parseRangeParams(apiParams(values, ['from', 'to']), 3600));
      const ids = tenant === undefined ? [null] : await tenantIds(tenant);
      for (const id of ids) {
        await service.rebuild(id, request.from, request.to);
        // The inventory of a range depends on every earlier event: it is rebuilt whole.
        await store.inventory.rebuild(id);
      }
      process.stdout.write(
        `rebuilt usage rollups for ${utc(request.from)} to ${utc(request.to)} and the object inventory${tenant === undefined ? ' (every tenant)' : ` (tenant ${tenant})`}\n`,
      );
      return 0;
    }
    default:
      throw new CliUsageError('usage takes no subcommand, verify or rebuild');
  }
}
