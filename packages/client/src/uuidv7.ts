/**
 * UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then a 12-bit counter so ids made in the same
 * millisecond still sort in creation order, then 62 random bits. Random bytes come from a pool
 * refilled in bulk, because one getRandomValues call per id would cost more than the rest.
 */
import { randomFillSync } from 'node:crypto';

const POOL_IDS = 512;
const pool = Buffer.alloc(8 * POOL_IDS);
let poolAt = pool.length;
let lastMs = -1;
let counter = 0;
const hex: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export function uuidv7(now = Date.now()): string {
  let ms = now;
  if (ms <= lastMs) {
    // Same (or a backwards) millisecond: count up; on overflow borrow the next millisecond.
    counter++;
    if (counter > 0xfff) {
      counter = 0;
      lastMs++;
    }
    ms = lastMs;
  } else {
    lastMs = ms;
    counter = 0;
  }
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const r = poolAt;
  poolAt += 8;
  const hi = Math.floor(ms / 0x1000000);
  const lo = ms % 0x1000000;
  return (
    hex[(hi >>> 16) & 0xff]! + hex[(hi >>> 8) & 0xff]! + hex[hi & 0xff]! + hex[(lo >>> 16) & 0xff]! + '-' +
    hex[(lo >>> 8) & 0xff]! + hex[lo & 0xff]! + '-' +
    hex[0x70 | (counter >>> 8)]! + hex[counter & 0xff]! + '-' +
    hex[0x80 | (pool[r]! & 0x3f)]! + hex[pool[r + 1]!]! + '-' +
    hex[pool[r + 2]!]! + hex[pool[r + 3]!]! + hex[pool[r + 4]!]! + hex[pool[r + 5]!]! + hex[pool[r + 6]!]! + hex[pool[r + 7]!]!
  );
}
