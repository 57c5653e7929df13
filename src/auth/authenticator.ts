/**
 * Resolves an X-API-Key to its tenant. Lookups are cached for a few seconds (bounded), so a key
 * revoked on any node stops working everywhere within `cacheSeconds`, without a database round trip
 * per request. The cache is keyed by the key itself, so that a hit costs no SHA-256; it lives in
 * process memory only, as the request's headers do, and is never logged.
 */
import { BmError } from '../errors.js';
import type { KeyScope, KeyStore } from '../store/types.js';
import { hashKey, isKeyShaped } from './keys.js';

export interface Tenant {
  id: number;
  name: string;
  keyId: string;
  scope: KeyScope;
}

export interface AuthenticatorOptions {
  keys: KeyStore;
  cacheSeconds: number;
  /** Most cached lookups (valid and invalid keys alike). */
  cacheMax?: number;
  /** A lookup the store has not answered by then is a 503, not a request held for ever. Default 5,000 ms. */
  lookupTimeoutMs?: number;
}

export class Authenticator {
  private readonly cache = new Map<string, { tenant: Tenant | undefined; until: number }>();
  private readonly cacheMax: number;

  constructor(private readonly options: AuthenticatorOptions) {
    this.cacheMax = options.cacheMax ?? 10000;
  }

  /** The tenant of `key`; throws a 401 BmError when missing, unknown or revoked. */
  async authenticate(key: string | string[] | undefined): Promise<Tenant> {
    if (key === undefined || key === '') throw new BmError('BM_ERR_AUTH_MISSING_KEY');
    // A string no key can be is refused without a lookup, and takes no room in the cache.
    if (typeof key !== 'string' || !isKeyShaped(key)) throw new BmError('BM_ERR_AUTH_INVALID_KEY');
    const now = Date.now();
    const hit = this.cache.get(key);
    let tenant: Tenant | undefined;
    if (hit !== undefined && hit.until > now) {
      tenant = hit.tenant;
    } else {
      const ms = this.options.lookupTimeoutMs ?? 5000;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the store did not answer within ${ms} ms`)), ms);
      });
      const record = await Promise.race([this.options.keys.findActiveByHash(hashKey(key)), timeout])
        .catch((cause: unknown) => {
          throw new BmError('BM_ERR_STORE_UNAVAILABLE', 'The key could not be checked: the store is unavailable.', { retryAfter: 1 }, { cause });
        })
        .finally(() => clearTimeout(timer));
      tenant = record && { id: record.tenantId, name: record.tenantName, keyId: record.id, scope: record.scope };
      if (this.cache.size >= this.cacheMax) this.cache.delete(this.cache.keys().next().value!);
      this.cache.delete(key);
      this.cache.set(key, { tenant, until: now + this.options.cacheSeconds * 1000 });
    }
    if (tenant === undefined) throw new BmError('BM_ERR_AUTH_INVALID_KEY');
    return tenant;
  }
}
