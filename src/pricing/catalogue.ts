/**
 * Loads price plans: the files shipped in prices/, then every *.json of --prices DIR, which adds a
 * plan or replaces the version with the same `id` and `validFrom`. Everything wrong is reported at
 * once, naming the file, so `serve` refuses to start on a bad catalogue.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { ConfigError } from '../config.js';
import { ACTION_NAMES } from '../events/catalogue.js';
import type { PricePlan } from './plan.js';
import { validFromSeconds } from './plan.js';

/** prices/ at the repository root (this file runs from dist/src/pricing/). */
export const SHIPPED_PRICES_DIR = fileURLToPath(new URL('../../../prices/', import.meta.url));
const SCHEMA_FILE = 'price-plan.schema.json';

export interface PriceBook {
  /** Every version of every plan, by id, oldest `validFrom` first. */
  readonly plans: ReadonlyMap<string, readonly PricePlan[]>;
  /** The plan id used for a provider's buckets when nothing else names one. */
  readonly defaults: ReadonlyMap<string, string>;
}

const validatePlan = new Ajv({ allErrors: true }).compile<PricePlan>(
  JSON.parse(readFileSync(join(SHIPPED_PRICES_DIR, SCHEMA_FILE), 'utf8')) as object,
);

export function loadPriceBook(extraDir?: string): PriceBook {
  const problems: string[] = [];
  const byVersion = new Map<string, { plan: PricePlan; file: string }>();
  for (const dir of extraDir === undefined ? [SHIPPED_PRICES_DIR] : [SHIPPED_PRICES_DIR, extraDir]) {
    let names: string[];
    try {
      names = readdirSync(dir).filter((n) => n.endsWith('.json') && n !== SCHEMA_FILE).sort();
    } catch (err) {
      problems.push(`--prices / BUCKETMETER_PRICES: cannot read folder ${dir}: ${(err as Error).message}`);
      continue;
    }
    for (const name of names) {
      const file = join(dir, name);
      const plan = readPlan(file, problems);
      if (plan !== undefined) byVersion.set(`${plan.id}\u0000${plan.validFrom ?? ''}`, { plan, file });
    }
  }
  const plans = new Map<string, PricePlan[]>();
  const files = new Map<string, string[]>();
  for (const { plan, file } of byVersion.values()) {
    plans.set(plan.id, [...(plans.get(plan.id) ?? []), plan]);
    files.set(plan.id, [...(files.get(plan.id) ?? []), file]);
  }
  const defaults = new Map<string, string>();
  for (const [id, versions] of plans) {
    versions.sort((a, b) => validFromSeconds(a) - validFromSeconds(b));
    checkVersionsAgree(id, versions, files.get(id)!, problems);
    if (versions.some((v) => v.default === true)) defaults.set(versions[0]!.provider, id);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { plans, defaults };
}

function readPlan(file: string, problems: string[]): PricePlan | undefined {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    problems.push(`${file}: not valid JSON: ${(err as Error).message}`);
    return undefined;
  }
  if (!validatePlan(data)) {
    for (const e of validatePlan.errors ?? []) problems.push(`${file}: ${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`);
    return undefined;
  }
  const before = problems.length;
  const { classes, actions } = data.requests;
  for (const action of ACTION_NAMES) {
    const cls = actions[action];
    if (cls === undefined) problems.push(`${file}: requests.actions has no entry for ${action} (every event kind needs a class or "free")`);
    else if (cls !== 'free' && classes[cls] === undefined) problems.push(`${file}: requests.actions.${action} names class "${cls}", which requests.classes does not define`);
  }
  for (const action of Object.keys(actions)) {
    if (!(ACTION_NAMES as string[]).includes(action)) problems.push(`${file}: requests.actions.${action} is not an event kind`);
  }
  checkTiers(file, 'storage.tiers', data.storage.tiers, problems);
  checkTiers(file, 'egress.tiers', data.egress.tiers, problems);
  if (data.validFrom !== undefined && Number.isNaN(validFromSeconds(data))) problems.push(`${file}: validFrom "${data.validFrom}" is not a calendar date`);
  if (data.egress.freeMultipleOfStorage !== undefined && data.storage.metering !== 'byte-hours') {
    problems.push(`${file}: egress.freeMultipleOfStorage needs storage.metering "byte-hours"`);
  }
  return problems.length === before ? data : undefined;
}

function checkTiers(file: string, path: string, tiers: readonly { uptoGb?: number }[], problems: string[]): void {
  tiers.forEach((tier, i) => {
    const last = i === tiers.length - 1;
    if (last && tier.uptoGb !== undefined) problems.push(`${file}: ${path}[${i}] is the last tier and must have no uptoGb (it covers the rest)`);
    if (!last && tier.uptoGb === undefined) problems.push(`${file}: ${path}[${i}] needs uptoGb (only the last tier is open-ended)`);
    const previous = i > 0 ? tiers[i - 1]!.uptoGb : 0;
    if (tier.uptoGb !== undefined && previous !== undefined && tier.uptoGb <= previous) {
      problems.push(`${file}: ${path}[${i}].uptoGb ${tier.uptoGb} must be above the previous tier's ${previous} (tiers in ascending order)`);
    }
  });
}

/** Versions of one plan may change prices, tiers and classes, not the units the month is counted in. */
function checkVersionsAgree(id: string, versions: PricePlan[], files: string[], problems: string[]): void {
  const first = versions[0]!;
  const unit = (p: PricePlan) =>
    JSON.stringify([p.provider, p.currency, p.storage.metering, p.storage.gbBytes, p.storage.hoursPerMonth, p.egress.gbBytes, p.egress.freeMultipleOfStorage ?? 0]);
  for (const v of versions.slice(1)) {
    if (unit(v) !== unit(first)) {
      problems.push(`plan ${id} (${files.join(', ')}): versions must share provider, currency, storage.metering, storage.gbBytes, storage.hoursPerMonth, egress.gbBytes and egress.freeMultipleOfStorage`);
      return;
    }
  }
}

/** The version of a plan in force at a time (unix seconds), or undefined before the first. */
export function versionAt(versions: readonly PricePlan[], at: number): PricePlan | undefined {
  let found: PricePlan | undefined;
  for (const v of versions) if (validFromSeconds(v) <= at) found = v;
  return found;
}
