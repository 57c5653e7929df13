/** README "Cost": the worked examples, one per metering kind, figure by figure; FOCUS; unpriced. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupCosts } from '../support/cost-groups.js';
import { priceMonth, unpricedRows } from '../../src/pricing/engine.js';
import type { CostRow } from '../../src/pricing/engine.js';
import { FOCUS_COLUMNS, focusCsv } from '../../src/pricing/focus.js';
import { sumCosts } from '../../src/pricing/money.js';
import type { PricePlan } from '../../src/pricing/plan.js';
import { DAY, HOUR, NOV, byteHoursExample, dailyPeakExample, dailySnapshotExample, key } from './examples.js';
import { BOOK } from './generate.js';

/** "count x charge customer cost" for each distinct fine row. */
function summary(rows: CostRow[]): string[] {
  const counts = new Map<string, number>();
  for (const r of rows) {
    const id = `${r.charge} ${r.key?.customerId ?? 'unallocated'} ${r.cost}`;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return [...counts].map(([id, n]) => `${n} x ${id}`);
}
/** In the API's row order: a dimension's none (here the unallocated row) first, as /v1/usage orders. */
const totals = (rows: CostRow[]) => groupCosts(rows, ['customerId'], () => 0).map((g) => `${g.unallocated ? 'unallocated' : g.dimensions.customerId} ${g.totalCost}`);

describe('worked examples (README "Cost")', () => {
  it('byte-hours (AWS S3 Standard)', () => {
    const rows = priceMonth(byteHoursExample);
    assert.deepEqual(summary(rows), ['720 x storage acme 0.0031944444', '1 x request:tier1 acme 0.0075000000', '1 x egress acme 1.2000000000', '1 x egress globex 0.6000000000']);
    assert.deepEqual(totals(rows), ['acme 3.5074999680', 'globex 0.6000000000']);
  });

  it('daily peak (Cloudflare R2)', () => {
    const rows = priceMonth(dailyPeakExample);
    assert.deepEqual(summary(rows), ['24 x storage acme 0.0083333333', '6 x storage globex 0.0083333333', '1 x storage-round-up unallocated 0.0050000000']);
    assert.deepEqual(totals(rows), ['unallocated 0.0050000000', 'acme 0.1999999992', 'globex 0.0499999998']);
    assert.ok(rows.filter((r) => r.key?.customerId === 'globex').every((r) => r.hour >= NOV + 6 * HOUR && r.hour < NOV + 12 * HOUR), 'shares stay in the hours that held the bytes');
  });

  it('daily snapshot (Wasabi): minimum object size, minimum duration, monthly minimum', () => {
    const rows = priceMonth(dailySnapshotExample);
    assert.deepEqual(summary(rows), ['30 x storage acme 0.1331666667', '1 x storage globex 0.0000009922', '1 x early-delete acme 0.2080729167', '1 x monthly-minimum unallocated 3.9949990078']);
    assert.deepEqual(totals(rows), ['unallocated 3.9949990078', 'acme 4.2030729177', 'globex 0.0000009922']);
    assert.equal(sumCosts(rows.filter((r) => r.charge !== 'early-delete').map((r) => r.cost)), '7.9900000010', '1 TB-month at $7.99');
    const early = rows.find((r) => r.charge === 'early-delete')!;
    assert.equal(early.category, 'other');
    assert.equal(early.hour, NOV + 9 * DAY + 14 * HOUR);
  });

  it('a month not over yet has no month-end charges', () => {
    const rows = priceMonth({ ...dailySnapshotExample, monthComplete: false });
    assert.ok(!rows.some((r) => r.key === null));
  });

  it('hours before a plan\'s first version are unpriced rows, kept with their quantities', () => {
    const aws = BOOK.plans.get('aws-s3-standard-us-east-1')!;
    const later: PricePlan = { ...aws[0]!, validFrom: '2026-11-15' };
    const rows = priceMonth({ month: '2026-11', versions: [later], quantities: [{ hour: NOV, key: key('acme'), requests: 10 }, { hour: NOV + 20 * DAY, key: key('acme'), requests: 10 }] });
    assert.deepEqual(rows.map((r) => [r.hour, r.category, r.cost]), [[NOV, 'unpriced', '0.0000000000'], [NOV + 20 * DAY, 'request', '0.0000500000']]);
    assert.deepEqual(unpricedRows([{ hour: NOV, key: key('a'), egressBytes: 5n }]).map((r) => [r.category, r.consumedQuantity, r.consumedUnit]), [['unpriced', '5', 'bytes']]);
  });
});

function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += c;
  }
  return rows;
}

describe('FOCUS 1.2 CSV', () => {
  const ctx = { provider: 'cloudflare', billingAccountId: 'tenant-1', billingAccountName: 'default', billingPeriodStart: NOV, billingPeriodEnd: NOV + 30 * DAY };

  it('carries the mandatory columns, and split rows add up to each charge they split', () => {
    const rows = priceMonth(dailyPeakExample);
    const [head, ...lines] = parseCsv(focusCsv(rows, ctx));
    for (const c of ['BilledCost', 'BillingAccountId', 'BillingAccountName', 'BillingCurrency', 'BillingPeriodEnd', 'BillingPeriodStart', 'ChargeCategory', 'ChargeClass', 'ChargeDescription', 'ChargePeriodEnd', 'ChargePeriodStart', 'ContractedCost', 'EffectiveCost', 'InvoiceIssuerName', 'ListCost', 'PricingQuantity', 'PricingUnit', 'ProviderName', 'PublisherName', 'ServiceCategory', 'ServiceName', 'ConsumedQuantity', 'ConsumedUnit', 'Tags']) {
      assert.ok(head!.includes(c), c);
    }
    assert.deepEqual(head, [...FOCUS_COLUMNS]);
    assert.equal(lines.length, rows.length);
    const col = (line: string[], name: (typeof FOCUS_COLUMNS)[number]) => line[FOCUS_COLUMNS.indexOf(name)]!;
    const first = lines[0]!;
    assert.equal(col(first, 'ChargePeriodStart'), '2026-11-01T00:00:00Z');
    assert.equal(col(first, 'ChargePeriodEnd'), '2026-11-01T01:00:00Z');
    assert.equal(col(first, 'ProviderName'), 'Cloudflare');
    assert.deepEqual(JSON.parse(col(first, 'Tags')), { customerId: 'acme', bucket: 'media', action: 'PutObject' });
    // The day's storage charge is split into 30 allocated rows; the round-up is unallocated.
    const byOrigin = new Map<string, string[]>();
    for (const line of lines) byOrigin.set(col(line, 'x_OriginChargeId'), [...(byOrigin.get(col(line, 'x_OriginChargeId')) ?? []), col(line, 'BilledCost')]);
    assert.deepEqual([...byOrigin.keys()], ['cloudflare-r2-standard/storage@2026-11-01T00:00:00Z', 'cloudflare-r2-standard/storage-round-up@2026-11-30T23:00:00Z']);
    assert.equal(sumCosts(byOrigin.get('cloudflare-r2-standard/storage@2026-11-01T00:00:00Z')!), '0.2499999990');
    const unallocated = lines.find((l) => col(l, 'AllocatedResourceId') === '' && col(l, 'ChargeDescription').includes('unallocated'))!;
    assert.equal(col(unallocated, 'BilledCost'), '0.0050000000');
    assert.equal(sumCosts(lines.map((l) => col(l, 'BilledCost'))), sumCosts(rows.map((r) => r.cost)));
    for (const l of lines) assert.equal(col(l, 'EffectiveCost'), col(l, 'BilledCost'));
  });
});
