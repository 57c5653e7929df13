/**
 * API keys: 256 random bits, shown once, stored only as a SHA-256 hash. A fast hash is enough
 * because the key is random, not a password: guessing it is as hard as guessing the key itself.
 */
import { createHash, randomBytes } from 'node:crypto';

const KEY_PREFIX = 'bmk_';

export interface GeneratedKey {
  /** Public id, safe to show and log (used by `keys list` and `keys revoke`). */
  id: string;
  /** The secret: printed once, never stored or logged. */
  key: string;
  hash: Buffer;
}

export function generateKey(): GeneratedKey {
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { id: randomBytes(6).toString('hex'), key, hash: hashKey(key) };
}

export function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}
