/** API keys, on the main connection. Other processes (the CLI) write the same tables: see busy_timeout. */
import type { ApiKeyRecord, NewApiKey } from '../types.js';
import type { Connection } from './connection.js';

// Selected under the names of ApiKeyRecord, so rows are records as they come.
const SELECT_KEY = `SELECT k.id AS id, k.tenant_id AS tenantId, t.name AS tenantName, k.scope AS scope,
  k.created_at AS createdAt, k.revoked_at AS revokedAt
  FROM api_keys k JOIN tenants t ON t.id = k.tenant_id`;

/** Synchronous: the store wraps each call for error mapping and the closed check. */
export class SqliteKeys {
  readonly #addTenant;
  readonly #tenantId;
  readonly #insert;
  readonly #any;
  readonly #byHash;
  readonly #all;
  readonly #revoke;
  readonly #createTx;
  readonly #createIfNoneTx;

  constructor(db: Connection) {
    this.#addTenant = db.prepare('INSERT INTO tenants (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING');
    this.#tenantId = db.prepare('SELECT id FROM tenants WHERE name = ?').pluck();
    this.#insert = db.prepare('INSERT INTO api_keys (id, tenant_id, hash, scope, created_at) VALUES (?, ?, ?, ?, ?)');
    this.#any = db.prepare('SELECT EXISTS (SELECT 1 FROM api_keys)').pluck();
    this.#byHash = db.prepare(`${SELECT_KEY} WHERE k.hash = ? AND k.revoked_at IS NULL`);
    this.#all = db.prepare(`${SELECT_KEY} ORDER BY k.created_at, k.id`);
    this.#revoke = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL');
    const insert = (key: NewApiKey): ApiKeyRecord => {
      this.#addTenant.run(key.tenantName, key.createdAt);
      const tenantId = this.#tenantId.get(key.tenantName) as number;
      this.#insert.run(key.id, tenantId, key.hash, key.scope ?? 'all', key.createdAt);
      return { id: key.id, tenantId, tenantName: key.tenantName, scope: key.scope ?? 'all', createdAt: key.createdAt, revokedAt: null };
    };
    this.#createTx = db.transaction(insert);
    // IMMEDIATE takes the write lock before looking, so two processes starting at once cannot both create.
    this.#createIfNoneTx = db.transaction((key: NewApiKey) => (this.#any.get() === 1 ? undefined : insert(key)));
  }

  create(key: NewApiKey): ApiKeyRecord {
    return this.#createTx.immediate(key);
  }

  createIfNone(key: NewApiKey): ApiKeyRecord | undefined {
    return this.#createIfNoneTx.immediate(key);
  }

  findActiveByHash(hash: Buffer): ApiKeyRecord | undefined {
    return this.#byHash.get(hash) as ApiKeyRecord | undefined;
  }

  list(): ApiKeyRecord[] {
    return this.#all.all() as ApiKeyRecord[];
  }

  revoke(id: string, at: number): boolean {
    return this.#revoke.run(at, id).changes === 1;
  }
}
