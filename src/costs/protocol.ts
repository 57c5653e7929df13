/** Messages between the main thread (thread.ts) and the cost thread (worker.ts); errors as plain data, since classes do not cross threads. */
import { BmError } from '../errors.js';
import type { ErrorCode } from '../errors.js';
import type { Config } from '../config.js';
import type { CostBounds, CostText } from './service.js';
import type { CaughtUpFor, ThreadReadsSpec } from '../store/types.js';
import type { UsageRequest } from '../usage/params.js';

export interface CostThreadData {
  reads: ThreadReadsSpec;
  /** Where the price book and the bucket assignment are read from (the thread loads its own). */
  pricing: Pick<Config, 'prices' | 'bucketPlans'>;
  /** What one request, and the months priced at once together, may price, and what is kept: derived from the thread's memory (costBounds). */
  bounds: Omit<CostBounds, 'heapMb'>;
}

export type ToCostThread =
  /**
   * A /v1/costs page (JSON or CSV, as request.format). `cancelled` (one Int32 on shared memory) is set
   * to 1 by the main thread when the request's client leaves: the pricing polls it (CostService).
   */
  | { type: 'page'; id: number; tenantId: number; request: UsageRequest; cancelled: Int32Array }
  /** The FOCUS export: priced first (answered 'ready' or 'error'), then sent a chunk per 'pull'. */
  | { type: 'focus'; id: number; tenantId: number; tenantName: string; request: UsageRequest; cancelled: Int32Array }
  | { type: 'pull'; id: number }
  /** The client went away: the rest of the export is dropped. */
  | { type: 'cancel'; id: number }
  /** The answer to a 'caughtUp' the thread asked for. */
  | { type: 'caughtUp'; id: number; error?: WireError }
  | { type: 'close' };

export type FromCostThread =
  | ({ type: 'page'; id: number } & CostText)
  | { type: 'ready'; id: number }
  /** null: the export is complete. */
  | { type: 'chunk'; id: number; chunk: string | null }
  | { type: 'error'; id: number; error: WireError }
  /** A read of the thread's waits for this (SQLite: the main thread talks to the writer). */
  | { type: 'caughtUp'; id: number; what: CaughtUpFor };

export type WireError = { code: ErrorCode; message: string; extra: BmError['extra'] } | { name: string; message: string; stack: string | undefined };

export function toWire(err: unknown): WireError {
  if (err instanceof BmError) return { code: err.code, message: err.message, extra: err.extra };
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { name: 'Error', message: String(err), stack: undefined };
}

/** A coded error as it was thrown; any other (a bug, the store failing) keeps its name, message and stack for the log. */
export function fromWire(wire: WireError): Error {
  if ('code' in wire) return new BmError(wire.code, wire.message, wire.extra);
  const error = new Error(wire.message);
  error.name = wire.name;
  if (wire.stack !== undefined) error.stack = wire.stack;
  return error;
}
