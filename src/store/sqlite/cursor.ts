/**
 * Page cursors, sealed (AES-256-GCM under the database's cursor secret, the tenant id as associated
 * data): a cursor holds a position in the store's global arrival order, which must tell a tenant
 * nothing of other tenants' traffic, and a cursor altered, forged or made for another tenant fails
 * to open.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { InvalidCursorError } from '../types.js';
import type { Connection } from './connection.js';

/** Where the next page starts: below this (timestamp, seq) in a time-range listing, below seq otherwise. */
export interface Position {
  /** null: a listing in arrival order. */
  timestamp: number | null;
  seq: number;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const PLAIN_BYTES = 17;
const SEALED_LENGTH = Math.ceil(((IV_BYTES + PLAIN_BYTES + TAG_BYTES) * 4) / 3);

export class CursorSeal {
  constructor(private readonly key: Buffer) {}

  static of(db: Connection): CursorSeal {
    const key = db.prepare("SELECT value FROM secrets WHERE name = 'cursor'").pluck().get() as Buffer | undefined;
    if (key === undefined || key.length !== 32) throw new Error('the cursor secret is missing');
    return new CursorSeal(key);
  }

  seal(tenantId: number, position: Position): string {
    const plain = Buffer.alloc(PLAIN_BYTES);
    plain[0] = position.timestamp === null ? 0 : 1;
    plain.writeDoubleLE(position.timestamp ?? 0, 1);
    plain.writeDoubleLE(position.seq, 9);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(aad(tenantId));
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return sealed.toString('base64url');
  }

  /** The position a cursor of this tenant holds; InvalidCursorError for anything else. */
  open(tenantId: number, cursor: string): Position {
    const sealed = cursor.length === SEALED_LENGTH ? Buffer.from(cursor, 'base64url') : Buffer.alloc(0);
    if (sealed.length !== IV_BYTES + PLAIN_BYTES + TAG_BYTES) throw invalid();
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.subarray(0, IV_BYTES));
      decipher.setAAD(aad(tenantId));
      decipher.setAuthTag(sealed.subarray(IV_BYTES + PLAIN_BYTES));
      plain = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, IV_BYTES + PLAIN_BYTES)), decipher.final()]);
    } catch {
      throw invalid();
    }
    return { timestamp: plain[0] === 1 ? plain.readDoubleLE(1) : null, seq: plain.readDoubleLE(9) };
  }
}

const aad = (tenantId: number): Buffer => Buffer.from(`bucketmeter cursor, tenant ${tenantId}`);
const invalid = () => new InvalidCursorError('cursor is not a nextCursor of this store for this tenant');
