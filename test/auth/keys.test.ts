/** Key generation and shape: the hosted service's format, 288 random bits, the key id as prefix. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { generateKey, hashKey, isKeyShaped } from '../../src/auth/keys.js';

const COLLECTOR_KEY_REGEX = /^([A-Za-z0-9]{8}\.)?[A-Za-z0-9+/]{48}$/;

describe('generateKey', () => {
  const generated = Array.from({ length: 1000 }, generateKey);

  it('makes keys the Java collector accepts: the key id, a dot, 48 base64 characters of 36 random bytes', () => {
    for (const { id, key, hash } of generated) {
      assert.match(key, COLLECTOR_KEY_REGEX);
      assert.match(id, /^[A-Za-z0-9]{8}$/);
      const [prefix, secret] = key.split('.');
      assert.equal(prefix, id);
      assert.equal(Buffer.from(secret!, 'base64').length, 36);
      assert.deepEqual(hash, createHash('sha256').update(key).digest());
      assert.ok(isKeyShaped(key));
    }
  });

  it('draws ids and secrets at random: no repeats, and every character of both alphabets in use', () => {
    assert.equal(new Set(generated.map((g) => g.key)).size, generated.length);
    assert.equal(new Set(generated.map((g) => g.id)).size, generated.length);
    assert.equal(new Set(generated.flatMap((g) => [...g.id])).size, 62);
    assert.equal(new Set(generated.flatMap((g) => [...g.key.split('.')[1]!])).size, 64);
  });
});

describe('isKeyShaped', () => {
  it('takes the current form and the earlier bmk_ form', () => {
    assert.ok(isKeyShaped('bmk_' + 'aZ09-_'.repeat(8).slice(0, 43)));
    assert.ok(isKeyShaped('AbCd1234.' + 'a+/Z'.repeat(12)));
  });

  it('refuses everything else, so that it costs no lookup', () => {
    for (const key of ['', 'bmk_wrong', 'bmk_' + 'a'.repeat(44), 'AbCd1234.' + 'a'.repeat(47), 'AbCd123.' + 'a'.repeat(48), 'a'.repeat(48), 'AbCd1234.' + 'a'.repeat(47) + '=', 'x'.repeat(300)]) {
      assert.equal(isKeyShaped(key), false, key);
    }
  });

  it('hashes the whole key', () => {
    assert.notDeepEqual(hashKey('AbCd1234.' + 'a'.repeat(48)), hashKey('AbCd1235.' + 'a'.repeat(48)));
  });
});
