/**
 * Object keys are stored once, in object_keys, and events refer to them by id (reads of popular
 * objects repeat the same keys). The id is a 31-bit hash of the key, so the table is found by its
 * rowid and needs no index on the value. A key whose hash is taken by another key gets the next free
 * id (linear probing): a lookup checks the value, so a collision costs a probe, never a wrong key.
 * Rows are never changed or deleted, so an id, once committed, means the same key for ever.
 */
import type { Statement } from 'better-sqlite3';
import type { Connection } from './connection.js';

/** 31 bits: an id takes 4 bytes in an event row (SQLite's int32) and 5 as object_keys' rowid. */
const ID_MASK = 0x7fffffff;

/** Beyond this many cached keys the cache starts over (a key is ~50 characters). */
const CACHE_LIMIT = 200_000;

export type KeyHash = (key: string) => number;

/**
 * Where a key's probe starts: FNV-1a over the UTF-16 code units, then murmur3's finalizer to spread
 * the bits; in plain JS, as it runs for every key the writer has not cached. Changing it would not
 * make a stored key read wrong (lookups compare values), but keys stored before would no longer be
 * found and would be stored again.
 */
export const hashObjectKey: KeyHash = (key) => {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) & ID_MASK;
};

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

  constructor(private readonly hash: KeyHash = hashObjectKey) {}

  /** Called between units, never within one (a unit's new keys must stay until it commits or rolls back). */
  trim(): void {
    if (this.#ids.size > CACHE_LIMIT) this.#ids.clear();
  }

  /** The key's id, inserting its row if it has none; a key inserted is pushed onto `added`. */
  id(s: ObjectKeyStatements, key: string, added: string[]): number {
    let id = this.#ids.get(key);
    if (id !== undefined) return id;
    // Inserting first: a key the cache lacks is most often new to the table too.
    for (id = this.hash(key) & ID_MASK; ; id = (id + 1) & ID_MASK) {
      if (s.add.run(id, key).changes === 1) {
        added.push(key);
        break;
      }
      if (s.find.get(id) === key) break;
    }
    this.#ids.set(key, id);
    return id;
  }

  /** Drops the keys a rolled-back unit inserted: their ids may go to other keys now. */
  forget(added: readonly string[]): void {
    for (const key of added) this.#ids.delete(key);
  }
}
