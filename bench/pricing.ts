/**
 * `node dist/bench/pricing.js [--customers N]`: throughput of the pure pricing engine and of the
 * FOCUS CSV writer, in-process (no store, no HTTP): one AWS account-month of N customers × 720
 * hours, each with storage and requests (2 fine rows per key-hour).
 */
import { parseArgs } from 'node:util';
import { loadPriceBook } from '../src/pricing/catalogue.js';
import { priceMonth } from '../src/pricing/engine.js';
import { focusLine } from '../src/pricing/focus.js';
import type { KeyHour } from '../src/pricing/quantities.js';

const { values } = parseArgs({ options: { customers: { type: 'string', default: '200' } } });
const customers = Number(values.customers);
const NOV = Date.UTC(2026, 10, 1) / 1000;
const quantities: KeyHour[] = [];
for (let c = 0; c < customers; c++) {
  const key = { customerId: `c${c}`, featureId: null, clientType: null, clientId: null, bucket: 'media', action: 'PutObject' as const };
  for (let h = 0; h < 720; h++) quantities.push({ hour: NOV + h * 3600, key, requests: 10 + c, byteSeconds: BigInt(c + 1) * 10n ** 12n });
}
const versions = loadPriceBook().plans.get('aws-s3-standard-us-east-1')!;
let started = performance.now();
const rows = priceMonth({ month: '2026-11', versions, quantities });
const engineMs = performance.now() - started;
const ctx = { provider: 'aws', billingAccountId: 't', billingAccountName: 't', billingPeriodStart: NOV, billingPeriodEnd: NOV + 30 * 86400 };
started = performance.now();
let bytes = 0;
for (const r of rows) bytes += focusLine(r, ctx).length;
const focusMs = performance.now() - started;
const rate = (n: number, ms: number) => Math.round((n / ms) * 1000).toLocaleString('en');
process.stdout.write(
  `engine: ${quantities.length} key-hours -> ${rows.length} cost rows in ${engineMs.toFixed(0)} ms (${rate(rows.length, engineMs)} rows/s)\n` +
    `FOCUS:  ${rows.length} lines, ${(bytes / 1e6).toFixed(1)} MB in ${focusMs.toFixed(0)} ms (${rate(rows.length, focusMs)} rows/s)\n`,
);
