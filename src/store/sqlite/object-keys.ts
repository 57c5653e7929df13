/**
 * Object keys are stored once, in object_keys, and events refer to them by id (reads of popular
 * objects repeat the same keys). The id is a keyed 31-bit hash of the key, so the table is found by its
 * rowid and needs no index on the value. A key whose hash is taken by another key gets the next free
 * id (linear probing): a lookup checks the value, so a collision costs a probe, never a wrong key.
 * Rows are never changed or deleted, so an id, once committed, means the same key for ever.
 */
import type { Statement } from 'better-sqlite3';
import siphash24 from 'siphash24';
import type { Connection } from './connection.js';

/** 31 bits: an id takes 4 bytes in an event row (SQLite's int32) and 5 as object_keys' rowid. */
const ID_MASK = 0x7fffffff;

/** Beyond this many cached keys the cache starts over (a key is ~50 characters). */
const CACHE_LIMIT = 200_000;

export type KeyHash = (key: string) => number;

/** Most ids one key may probe: with a keyed hash a run this long does not happen below a full table. */
export const MAX_PROBES = 256;

/**
 * Where a key's probe starts: SipHash-2-4 of its UTF-16 code units (lossless, so no two keys share
 * input bytes) under this database's random secret. Without a secret anyone can compute keys that
 * share one probe run and make each new key cost the writer thousands of probes. Keys stored under
 * an earlier hash stay readable (lookups compare values) and are stored again once under this one.
 */
export function keyedObjectKeyHash(secret: Uint8Array): KeyHash {
  const out = new Uint8Array(8);
  const view = new DataView(out.buffer);
  let input = Buffer.alloc(1024);
  return (key) => {
    if (key.length * 2 > input.length) input = Buffer.alloc(key.length * 2);
    const n = input.write(key, 'utf16le');
    siphash24(input.subarray(0, n), secret, out, true);
    return view.getUint32(0, true) & ID_MASK;
  };
}

/** The object-key hash of this database, keyed with its secret (migration 3). */
export function objectKeyHash(db: Connection): KeyHash {
  const secret = db.prepare("SELECT value FROM secrets WHERE name = 'object_key_hash'").pluck().get() as Buffer | undefined;
  if (secret === undefined || secret.length < 16) throw new Error('the object key hash secret is missing');
  return keyedObjectKeyHash(secret);
}

export interface ObjectKeyStatements {
  add: Statement;
  find: Statement;
}

export function prepareObjectKeys(db: Connection): ObjectKeyStatements {
  return {
    add: db.prepare('INSERT INTO object_keys (id, value) VALUES (?, ?) ON CONFLICT (id) DO NOTHING'),
    find: db.prepare('SELECT value FROM object_keys WHERE id = ?').pluck(),
  };
}

/** The writer's side: key → id, storing keys not seen before. */
export class ObjectKeyIds {
  /** key → id of committed rows only: the caller forgets a rolled-back unit's keys. */
  readonly #ids = new Map<string, number>();

  constructor(private readonly hash: KeyHash) {}

  /** Called between units, never within one (a unit's new keys must stay until it commits or rolls back). */
  trim(): void {
    if (this.#ids.size > CACHE_LIMIT) this.#ids.clear();
  }

  /** The key's id, inserting its row if it has none; a key inserted is pushed onto `added`. */
  id(s: ObjectKeyStatements, key: string, added: string[]): number {
    let id = this.#ids.get(key);
    if (id !== undefined) return id;
    // Inserting first: a key the cache lacks is most often new to the table too.
    id = this.hash(key) & ID_MASK;
    for (let probes = 1; ; probes++, id = (id + 1) & ID_MASK) {
      if (s.add.run(id, key).changes === 1) {
        added.push(key);
        break;
      }
      if (s.find.get(id) === key) break;
      if (probes === MAX_PROBES) throw new Error(`object key not placed within ${MAX_PROBES} probes: the object_keys table is nearly full`);
    }
    this.#ids.set(key, id);
    return id;
  }

  /** Drops the keys a rolled-back unit inserted: their ids may go to other keys now. */
  forget(added: readonly string[]): void {
    for (const key of added) this.#ids.delete(key);
  }
}
