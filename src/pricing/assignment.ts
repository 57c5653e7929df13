/**
 * Which plan prices a bucket: --bucket-plans FILE names plans per bucket and per provider; a bucket
 * not named uses its provider's entry, else the provider's shipped default. A provider with neither
 * is unpriced: its usage stays, its cost is an explicit `unpriced` row.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config.js';
import type { PriceBook } from './catalogue.js';

export interface BucketPlans {
  readonly buckets: Readonly<Record<string, string>>;
  readonly providers: Readonly<Record<string, string>>;
}

export const NO_BUCKET_PLANS: BucketPlans = { buckets: {}, providers: {} };

export function loadBucketPlans(file: string, book: PriceBook): BucketPlans {
  const where = `--bucket-plans / BUCKETMETER_BUCKET_PLANS (${file})`;
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError([`${where}: cannot read it as JSON: ${(err as Error).message}`]);
  }
  const problems: string[] = [];
  const section = (name: 'buckets' | 'providers'): Record<string, string> => {
    const value = (data as Record<string, unknown> | null)?.[name] ?? {};
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.push(`${where}: "${name}" must be an object of name → plan id`);
      return {};
    }
    for (const [k, v] of Object.entries(value)) {
      if (typeof v !== 'string') problems.push(`${where}: ${name}.${k} must be a plan id string, got ${JSON.stringify(v)}`);
      else if (!book.plans.has(v)) problems.push(`${where}: ${name}.${k} names plan "${v}", which no price file defines (see \`bucketmeter prices list\`)`);
    }
    return value as Record<string, string>;
  };
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new ConfigError([`${where}: expected {"buckets": {...}, "providers": {...}}`]);
  for (const k of Object.keys(data)) if (k !== 'buckets' && k !== 'providers') problems.push(`${where}: unknown property "${k}" (expected buckets, providers)`);
  const result = { buckets: section('buckets'), providers: section('providers') };
  if (problems.length > 0) throw new ConfigError(problems);
  return result;
}

/** The plan id for a bucket of a provider, or undefined when the provider is unpriced. */
export function planIdFor(book: PriceBook, assignment: BucketPlans, provider: string, bucket: string | null): string | undefined {
  return (bucket === null ? undefined : assignment.buckets[bucket]) ?? assignment.providers[provider] ?? book.defaults.get(provider);
}

/**
 * A provider's buckets split by the plan that prices them (key undefined: unpriced). Each group is
 * one account-month for the engine: its tiers, allowances and daily peak are shared by its buckets.
 */
export function bucketsByPlan(book: PriceBook, assignment: BucketPlans, provider: string, buckets: readonly string[]): Map<string | undefined, string[]> {
  const groups = new Map<string | undefined, string[]>();
  for (const bucket of buckets) {
    const id = planIdFor(book, assignment, provider, bucket);
    groups.set(id, [...(groups.get(id) ?? []), bucket]);
  }
  return groups;
}
