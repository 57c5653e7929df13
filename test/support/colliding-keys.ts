/**
 * Object keys that all collide under the object-key hash bucketmeter used before issue 11 (FNV-1a
 * over UTF-16 code units, murmur3's finalizer, 31 bits, no secret): what a hostile tenant could
 * compute offline to make each new key cost the writer a probe past every earlier one.
 */

const FNV_PRIME = 0x01000193;

/** The old hash, exactly as it was (src/store/sqlite/object-keys.ts before the keyed hash). */
export function oldObjectKeyHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), FNV_PRIME);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) & 0x7fffffff;
}

/** The multiplicative inverse of an odd number modulo 2^32 (Newton's iteration). */
function inverse(a: number): number {
  let x = a;
  for (let i = 0; i < 5; i++) x = Math.imul(x, 2 - Math.imul(a, x));
  return x;
}

/** A code unit that survives validation and JSON untouched: no control character, no surrogate. */
const usable = (c: number): boolean => c >= 0x20 && c < 0xd800 && !(c >= 0x7f && c < 0xa0) && c !== 0x22 && c !== 0x5c;

/**
 * `count` distinct keys whose old hash is the same: each is `prefix` and a number, then two code
 * units, the last one solved for (FNV-1a is invertible one step at a time).
 */
export function collidingKeys(count: number, prefix = 'flood/'): string[] {
  const target = 0x2468ace0;
  const beforeLast = Math.imul(target, inverse(FNV_PRIME)) >>> 0;
  const keys: string[] = [];
  for (let n = 0; keys.length < count; n++) {
    const head = `${prefix}${n}/`;
    let h = 0x811c9dc5;
    for (let i = 0; i < head.length; i++) h = Math.imul(h ^ head.charCodeAt(i), FNV_PRIME);
    for (let c1 = 0x4e00; c1 < 0x9fff && keys.length < count; c1++) {
      const s1 = Math.imul(h ^ c1, FNV_PRIME);
      const c2 = (s1 ^ beforeLast) >>> 0;
      if (c2 < 0x10000 && usable(c2)) keys.push(head + String.fromCharCode(c1, c2));
    }
  }
  return keys;
}
