/**
 * What the pricing engine is fed: the quantities of ONE tenant's provider account on ONE plan for
 * ONE calendar month (UTC), at the finest grain, attribution key × hour. The usage rollups
 * (issue 13) give requests and egress; the object inventory (issue 14) gives the storage inputs.
 * All sizes are exact integers (bigint); the engine does no I/O.
 *
 * Storage inputs, by the plan's `storage.metering`:
 * - `byte-hours`: `byteSeconds`, the integral of the key's live bytes (versions + parts of uploads
 *   in progress) over the hour, in byte-seconds.
 * - `daily-snapshot`: `snapshotBytes`, the key's live bytes at 00:00 UTC, on the row whose `hour`
 *   is that midnight (rows at other hours carry none).
 * - `daily-peak`: `AccountMonth.dailyPeakBytes`, the account's highest live bytes of each UTC day,
 *   shared out to the keys in proportion to their `byteSeconds` in that day's hours.
 * Minimum object size (`storage.minimumObjectBytes` > 0): the feeder also gives, for the objects
 * smaller than that minimum, their object-seconds and byte-seconds (`smallObjectSeconds`,
 * `smallObjectByteSeconds`; at a snapshot `snapshotSmallObjects`, `snapshotSmallObjectBytes`);
 * the engine bills each as if it held the minimum: padded = bytes + min × objects − their bytes.
 * Minimum storage duration (`storage.minimumDays` > 0): `earlyDeleteByteSeconds` on the row of the
 * hour a version ended before its minimum age, with the key of its creator: its padded size ×
 * the seconds left to the minimum (what the provider bills for the rest).
 */
import type { ActionName } from '../events/catalogue.js';
import type { PricePlan } from './plan.js';

/** Who a quantity belongs to; `action` is the event kind (for storage: the creating kind). */
export interface Attribution {
  readonly customerId: string | null;
  readonly featureId: string | null;
  readonly clientType: string | null;
  readonly clientId: string | null;
  readonly bucket: string | null;
  readonly action: ActionName;
}

export interface KeyHour {
  /** Unix seconds of the hour's start (a multiple of 3600, inside the month). */
  readonly hour: number;
  /**
   * A run: the quantity stands for this many consecutive hours from `hour` (default 1), each with
   * the same storage quantities (snapshot ones at each UTC midnight among them). Only storage
   * quantities repeat; requests, egress and early deletes are single hours.
   */
  readonly hours?: number;
  readonly key: Attribution;
  /** Requests of kind `key.action` in the hour. */
  readonly requests?: number;
  /** Billable egress bytes (GetObject with isBillableEgress) in the hour. */
  readonly egressBytes?: bigint;
  readonly byteSeconds?: bigint;
  readonly smallObjectSeconds?: bigint;
  readonly smallObjectByteSeconds?: bigint;
  readonly snapshotBytes?: bigint;
  readonly snapshotSmallObjects?: bigint;
  readonly snapshotSmallObjectBytes?: bigint;
  readonly earlyDeleteByteSeconds?: bigint;
}

export interface AccountMonth {
  /** `YYYY-MM`, a calendar month in UTC. */
  readonly month: string;
  /** Every version of the plan (catalogue order); each hour is priced by the one in force. */
  readonly versions: readonly PricePlan[];
  readonly quantities: readonly KeyHour[];
  /** daily-peak plans: UTC day start (unix seconds) → the account's peak live bytes that day. */
  readonly dailyPeakBytes?: ReadonlyMap<number, bigint>;
  /**
   * Whether the month is over: only then are month-end charges known (monthly minimum, rounding up
   * to whole units, the monthly fee). Default true.
   */
  readonly monthComplete?: boolean;
}
