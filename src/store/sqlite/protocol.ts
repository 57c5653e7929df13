/** Messages between the store (main thread) and its writer and derived threads. */
import type { ConnectionSettings } from './connection.js';
import type { PackedUnit } from './layout.js';
import type { SumsBatch } from './usage-sums.js';

export interface WriterData {
  path: string;
  busyTimeoutMs: number;
  /** Most events the writer merges into one transaction from the commit requests waiting for it. */
  maxGroupEvents: number;
  /** false only in the bench (default true): events are stored without usage receipts, and nothing is folded into the rollups. */
  usage?: boolean;
  /** false only in the bench (default true): events are stored without the inventory's outbox rows. */
  inventory?: boolean;
  /** Most rows the usage sums the writer keeps may hold (default MAX_SUM_ROWS, usage-sums.ts). */
  usageSumRows?: number;
}

/** The derived thread's (derived-worker.ts): the events file's path (the derived file's is derived from it). */
export interface DerivedData {
  path: string;
  busyTimeoutMs: number;
  /** false only in the bench: nothing is folded. */
  usage?: boolean;
  /** Seqs of pending events one inventory catch-up step applies (default CATCH_UP_SPAN). */
  catchUpSpan?: number;
}

/** An inventory catch-up step's answer when outbox rows are left for the next step. */
export const INVENTORY_MORE = 'more';

export type WriterCommand =
  /** `deadline`: epoch milliseconds after which the unit is refused rather than begun. */
  | { type: 'commit'; unit: PackedUnit; deadline: number }
  /** Commits a tiny write: the writer can write now. */
  | { type: 'check' }
  | { type: 'purgeQuarantine'; before: number }
  /** The durability settings in effect on the writer's connection. */
  | { type: 'settings' }
  /** The writer's usage sums, handed over, and the last seq stored (TakenSums). */
  | { type: 'takeSums' }
  | { type: 'close' };

export type WriterRequest = WriterCommand & { id: number };

/** The derived thread's (derived-worker.ts). */
export type DerivedCommand =
  /**
   * Folds the writer's sums given (kept until the cursor reaches them), or the next chunk of events
   * past the usage cursor, up to seq upTo; answers upTo while more remain, else null.
   */
  | { type: 'foldUsage'; upTo: number; sums: SumsBatch | null }
  /** Opens the thread's connection (both files attached), so that the thread and its connection exist from the store's open. */
  | { type: 'open' }
  /** Recomputes the usage rollups of hours [fromHour, toHour) from the events (all tenants when null). */
  | { type: 'rebuildUsage'; tenantId: number | null; fromHour: number; toHour: number }
  /** Inventory work: apply the outbox, rebuild from the events, or compare with them (answers JSON). */
  /** `upTo`: the last outbox id a catch-up step applies (default all). */
  | { type: 'inventory'; op: 'catchUp' | 'rebuild' | 'verify'; tenantId: number | null; upTo?: number }
  | { type: 'close' };

export type DerivedRequest = DerivedCommand & { id: number };

/** The writer's sums (null: none kept) and the last seq stored when it handed them over: a fold's goal. */
export interface TakenSums {
  sums: SumsBatch | null;
  stored: number;
}

export type WriterResult =
  /** Per event of the unit: its seq, or 0 for a duplicate. */
  | Float64Array<ArrayBuffer>
  | number
  | TakenSums
  | ConnectionSettings
  /** The inventory's verify: its differences as JSON. */
  | string
  | null;

export type WriterResponse =
  /** `foldSums`: the writer's usage sums are due for a fold (PendingSums.foldDue), on a commit's answer. */
  | { id: number; ok: true; result: WriterResult; foldSums?: true }
  | { id: number; ok: false; error: { message: string; code: string | undefined } };
