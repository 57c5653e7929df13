/**
 * API keys, in the hosted service's format that its clients check (`^([A-Za-z0-9]{8}\.)?[A-Za-z0-9+/]{48}$`):
 * the key id (8 letters or digits, public), a dot, then 288 random bits as 48 characters of standard
 * base64. Keys are shown once and stored only as a SHA-256 hash of the whole key; a fast hash is
 * enough because the key is random, not a password. Keys made before this format (`bmk_` + 43
 * base64url characters) are looked up the same way, by hash, and keep working.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const ID_LENGTH = 8;
/** 36 bytes are exactly 48 base64 characters, without padding. */
const SECRET_BYTES = 36;

export interface GeneratedKey {
  /** Public id, safe to show and log (used by `keys list` and `keys revoke`); the key's prefix. */
  id: string;
  /** The secret: printed once, never stored or logged. */
  key: string;
  hash: Buffer;
}

export function generateKey(): GeneratedKey {
  const id = Array.from({ length: ID_LENGTH }, () => ID_ALPHABET[randomInt(ID_ALPHABET.length)]).join('');
  const key = `${id}.${randomBytes(SECRET_BYTES).toString('base64')}`;
  return { id, key, hash: hashKey(key) };
}

/** The current form, and the earlier one (`bmk_` + 43 base64url characters): nothing else can be a key. */
const KEY_SHAPE = /^(?:[A-Za-z0-9]{8}\.[A-Za-z0-9+/]{48}|bmk_[A-Za-z0-9_-]{43})$/;

/** Whether `key` has the shape of a key bucketmeter made, so that other strings cost no lookup. */
export function isKeyShaped(key: string): boolean {
  return KEY_SHAPE.test(key);
}

export function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}
