/** The three worked examples of README "Cost", one per storage metering kind. */
import type { ActionName } from '../../src/events/catalogue.js';
import type { AccountMonth, Attribution, KeyHour } from '../../src/pricing/quantities.js';
import { BOOK } from './generate.js';

export const GiB = 2n ** 30n;
export const GB = 10n ** 9n;
export const NOV = Date.UTC(2026, 10, 1) / 1000;
export const HOUR = 3600;
export const DAY = 86400;

export const key = (customerId: string, action: ActionName = 'PutObject'): Attribution => ({ customerId, featureId: null, clientType: null, clientId: null, bucket: 'media', action });
const everyHour = (from: number, count: number, row: (hour: number) => Omit<KeyHour, 'hour'>): KeyHour[] =>
  Array.from({ length: count }, (_, i) => ({ hour: from + i * HOUR, ...row(from + i * HOUR) }));

/** AWS, byte-hours: 100 GiB all month; 120 GiB of egress in one hour across the free 100 GB; 1,500 PUTs. */
export const byteHoursExample: AccountMonth = {
  month: '2026-11',
  versions: BOOK.plans.get('aws-s3-standard-us-east-1')!,
  quantities: [
    ...everyHour(NOV, 720, (hour) => ({ key: key('acme'), byteSeconds: 100n * GiB * 3600n, ...(hour === NOV + DAY + 10 * HOUR ? { requests: 1500 } : {}) })),
    { hour: NOV + DAY + 10 * HOUR, key: key('acme', 'GetObject'), egressBytes: 80n * GiB },
    { hour: NOV + DAY + 10 * HOUR, key: key('globex', 'GetObject'), egressBytes: 40n * GiB },
  ],
};

/** R2, daily peak: on 1 Nov acme holds 400 GB all day, globex 400 GB for 6 hours; peak 800 GB. */
export const dailyPeakExample: AccountMonth = {
  month: '2026-11',
  versions: BOOK.plans.get('cloudflare-r2-standard')!,
  quantities: [
    ...everyHour(NOV, 24, () => ({ key: key('acme'), byteSeconds: 400n * GB * 3600n })),
    ...everyHour(NOV + 6 * HOUR, 6, () => ({ key: key('globex'), byteSeconds: 400n * GB * 3600n })),
  ],
  dailyPeakBytes: new Map([[NOV, 800n * GB]]),
};

/**
 * Wasabi, daily snapshot: acme has 512 GiB at every midnight; globex 1,000 objects of 1 KiB at the
 * first midnight (billed as 4 KiB each); acme deletes 10 GiB on 10 Nov 80 days before its 90-day
 * minimum; the month stays under the 1 TB minimum.
 */
export const dailySnapshotExample: AccountMonth = {
  month: '2026-11',
  versions: BOOK.plans.get('wasabi-pay-as-you-go')!,
  quantities: [
    ...Array.from({ length: 30 }, (_, d) => ({ hour: NOV + d * DAY, key: key('acme'), snapshotBytes: 512n * GiB })),
    { hour: NOV, key: key('globex'), snapshotBytes: 1000n * 1024n, snapshotSmallObjects: 1000n, snapshotSmallObjectBytes: 1000n * 1024n },
    { hour: NOV + 9 * DAY + 14 * HOUR, key: key('acme', 'DeleteObject'), earlyDeleteByteSeconds: 10n * GiB * 80n * 86400n },
  ],
};
