/** Attribution per request: whatever runs inside withAttribution(), awaited or not, sees it. */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Attribution } from '../types.js';

const storage = new AsyncLocalStorage<Attribution>();

/** Runs fn with this attribution for every S3 call it makes; nested calls add to (and override) the outer one. */
export function withAttribution<T>(attribution: Attribution, fn: () => T): T {
  const outer = storage.getStore();
  return storage.run(outer === undefined ? attribution : { ...outer, ...attribution }, fn);
}

export function currentAttribution(): Attribution | undefined {
  return storage.getStore();
}
