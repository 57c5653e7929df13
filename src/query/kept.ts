/**
 * Computed answers a process keeps for reuse, each with the version of the data it was computed
 * from (as text: versionKey in usage/service.ts) and reused only while that is unchanged: a reuse
 * is exactly what computing again would give.
 * Bounded by rows, least recently used out first; an entry older than `ttlMs` is dropped; one owner
 * (a tenant) holds at most `share` of the rows, so it cannot push every other tenant's answers out.
 */
export interface KeptLimits {
  rows: number;
  /** The fraction of `rows` one owner may hold; default 1. */
  share?: number;
  /** Default: kept until pushed out. */
  ttlMs?: number;
  now?: () => number;
}

interface Entry<T> {
  owner: number;
  version: string;
  value: T;
  rows: number;
  at: number;
}

export class KeptAnswers<T> {
  readonly #entries = new Map<string, Entry<T>>();
  readonly #owned = new Map<number, number>();
  #rows = 0;

  constructor(private readonly limits: KeptLimits) {}

  /** Rows kept now. */
  get rows(): number {
    return this.#rows;
  }

  get(owner: number, id: string, version: string): T | undefined {
    const entry = this.#entries.get(id);
    if (entry === undefined || entry.owner !== owner) return undefined;
    if (entry.version !== version || this.#expired(entry)) {
      this.delete(id);
      return undefined;
    }
    this.#entries.delete(id);
    this.#entries.set(id, entry);
    return entry.value;
  }

  set(owner: number, id: string, version: string, value: T, rows: number): void {
    this.delete(id);
    for (const [old, entry] of this.#entries) if (this.#expired(entry)) this.delete(old);
    const share = Math.floor(this.limits.rows * (this.limits.share ?? 1));
    if (rows > share) return;
    for (const [old, entry] of this.#entries) {
      if ((this.#owned.get(owner) ?? 0) + rows <= share) break;
      if (entry.owner === owner) this.delete(old);
    }
    this.#entries.set(id, { owner, version, value, rows, at: this.#now() });
    this.#rows += rows;
    this.#owned.set(owner, (this.#owned.get(owner) ?? 0) + rows);
    for (const old of this.#entries.keys()) {
      if (this.#rows <= this.limits.rows) break;
      this.delete(old);
    }
  }

  delete(id: string): void {
    const entry = this.#entries.get(id);
    if (entry === undefined) return;
    this.#entries.delete(id);
    this.#rows -= entry.rows;
    const owned = this.#owned.get(entry.owner)! - entry.rows;
    if (owned === 0) this.#owned.delete(entry.owner);
    else this.#owned.set(entry.owner, owned);
  }

  #now(): number {
    return this.limits.now?.() ?? Date.now();
  }

  #expired(entry: Entry<T>): boolean {
    return this.limits.ttlMs !== undefined && this.#now() - entry.at > this.limits.ttlMs;
  }
}
