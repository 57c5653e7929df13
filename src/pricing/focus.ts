/**
 * FinOps FOCUS 1.2 CSV: the 21 mandatory columns, ConsumedQuantity/Unit, Tags, and FOCUS 1.3's
 * split-allocation columns. bucketmeter is the data generator: each account-level charge of a slot
 * (x_OriginChargeId) is split into one row per attribution key plus, where a minimum or rounding
 * billed unused quantity, an unallocated row (AllocatedResourceId empty). The split rows' costs are
 * the rounded fine amounts, so they sum exactly to the charge they split.
 */
import type { CostRow } from './engine.js';

export const FOCUS_COLUMNS = [
  'BilledCost', 'BillingAccountId', 'BillingAccountName', 'BillingCurrency', 'BillingPeriodEnd', 'BillingPeriodStart',
  'ChargeCategory', 'ChargeClass', 'ChargeDescription', 'ChargeFrequency', 'ChargePeriodEnd', 'ChargePeriodStart',
  'ConsumedQuantity', 'ConsumedUnit', 'ContractedCost', 'EffectiveCost', 'InvoiceIssuerName', 'ListCost',
  'PricingQuantity', 'PricingUnit', 'ProviderName', 'PublisherName', 'ServiceCategory', 'ServiceName', 'SkuId', 'Tags',
  'AllocatedMethodId', 'AllocatedResourceId', 'x_PlanId', 'x_PlanValidFrom', 'x_OriginChargeId',
] as const;

const PROVIDER_NAMES: Record<string, [provider: string, service: string]> = {
  aws: ['AWS', 'Amazon Simple Storage Service'],
  backblaze: ['Backblaze', 'B2 Cloud Storage'],
  wasabi: ['Wasabi', 'Wasabi Hot Cloud Storage'],
  cloudflare: ['Cloudflare', 'R2'],
  gcp: ['Google Cloud', 'Cloud Storage'],
  digitalocean: ['DigitalOcean', 'Spaces Object Storage'],
};

export interface FocusContext {
  readonly provider: string;
  /** The tenant: its provider account is the billing account. */
  readonly billingAccountId: string;
  readonly billingAccountName: string;
  readonly billingPeriodStart: number;
  readonly billingPeriodEnd: number;
}

const isoCache = new Map<number, string>();
/** ISO 8601 UTC of a whole second; cached, as an export repeats the same few hundred hours. */
function iso(seconds: number): string {
  let text = isoCache.get(seconds);
  if (text === undefined) {
    text = new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
    if (isoCache.size > 100_000) isoCache.clear();
    isoCache.set(seconds, text);
  }
  return text;
}

export function focusHeader(): string {
  return FOCUS_COLUMNS.join(',') + '\n';
}

export function focusLine(r: CostRow, ctx: FocusContext): string {
  const [providerName, serviceName] = PROVIDER_NAMES[ctx.provider] ?? [ctx.provider, ctx.provider];
  const tags: Record<string, string> = {};
  if (r.key !== null) {
    for (const k of ['customerId', 'featureId', 'clientType', 'clientId', 'bucket', 'action'] as const) {
      const v = r.key[k];
      if (v !== null) tags[k] = v;
    }
  }
  const fee = r.charge === 'monthly-fee';
  const cells: Record<(typeof FOCUS_COLUMNS)[number], string> = {
    BilledCost: r.cost,
    BillingAccountId: ctx.billingAccountId,
    BillingAccountName: ctx.billingAccountName,
    BillingCurrency: r.currency ?? '',
    BillingPeriodEnd: iso(ctx.billingPeriodEnd),
    BillingPeriodStart: iso(ctx.billingPeriodStart),
    ChargeCategory: fee ? 'Purchase' : 'Usage',
    ChargeClass: '',
    ChargeDescription: `${r.charge}${r.key === null ? ' (unallocated)' : ''}`,
    ChargeFrequency: fee ? 'Recurring' : 'Usage-Based',
    ChargePeriodEnd: iso(r.hour + 3600),
    ChargePeriodStart: iso(r.hour),
    ConsumedQuantity: r.consumedQuantity,
    ConsumedUnit: r.consumedUnit,
    ContractedCost: r.cost,
    EffectiveCost: r.cost,
    InvoiceIssuerName: providerName,
    ListCost: r.cost,
    PricingQuantity: r.pricingQuantity,
    PricingUnit: r.pricingUnit,
    ProviderName: providerName,
    PublisherName: providerName,
    ServiceCategory: 'Storage',
    ServiceName: serviceName,
    SkuId: r.planId === null ? '' : `${r.planId}/${r.charge}`,
    Tags: JSON.stringify(tags),
    AllocatedMethodId: r.key === null ? '' : `bucketmeter-${r.category}-proportional-v1`,
    AllocatedResourceId: r.key === null ? '' : (r.key.customerId ?? ''),
    x_PlanId: r.planId ?? '',
    x_PlanValidFrom: r.validFrom ?? '',
    x_OriginChargeId: `${r.planId ?? 'unpriced'}/${r.charge}@${iso(r.slot)}`,
  };
  return FOCUS_COLUMNS.map((c) => csvCell(cells[c])).join(',') + '\n';
}

export function focusCsv(rows: readonly CostRow[], ctx: FocusContext): string {
  return focusHeader() + rows.map((r) => focusLine(r, ctx)).join('');
}

function csvCell(value: string): string {
  const plain = !value.includes('"') && !value.includes(',') && !value.includes('\n') && !value.includes('\r');
  return plain ? value : `"${value.replaceAll('"', '""')}"`;
}
