/**
 * The two stores as the reliability tests see them: where a server keeps its data, and a direct look
 * at what is stored (read from the database files or tables, not through the server under test).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { BACKENDS, dropFreshStores, withPg } from '../../test/support/backends.js';
import type { Backend } from '../../test/support/backends.js';
import { tempDir } from '../../test/support/server.js';
import type { StartOptions } from '../../test/support/server.js';
import { Tally } from './measure.js';

export type StoreTarget = { backend: 'sqlite'; dataDir: string } | { backend: 'postgres'; url: string };

export function backend(name: Backend['name']): Backend {
  return BACKENDS.find((b) => b.name === name)!;
}

/**
 * For the full suite, which must not pass without a store: the figures (kills on both stores,
 * the connection cut, revocation across nodes) need PostgreSQL. The short run in `npm test` skips instead.
 */
export function requireBackend(of: Backend): void {
  if (of.skip !== false) throw new Error(`the full reliability suite needs ${of.name} and does not skip it: set TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test)`);
}

const sqliteDirs: string[] = [];

/** A fresh, empty store of the backend; dropTargets() removes it. */
export async function freshTarget(of: Backend): Promise<StoreTarget> {
  const [flag, value] = await of.fresh();
  return flag === '--data-dir' ? sqliteTarget(value) : { backend: 'postgres', url: value! };
}

export function sqliteTarget(dataDir = tempDir('bm-rel-')): StoreTarget {
  sqliteDirs.push(dataDir);
  return { backend: 'sqlite', dataDir };
}

/** Removes every store made here: the tests leave gigabytes of SQLite files and scratch databases otherwise. */
export async function dropTargets(): Promise<void> {
  for (const dir of sqliteDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  await dropFreshStores();
}

/** Command-line flags that point the CLI or a server at the store. */
export function storeArgs(target: StoreTarget): string[] {
  return target.backend === 'sqlite' ? ['--data-dir', target.dataDir] : ['--database-url', target.url];
}

/** startServer options for the store, with more flags and environment. */
export function serverOptions(target: StoreTarget, args: string[] = [], env: Record<string, string> = {}): StartOptions {
  return target.backend === 'sqlite' ? { dataDir: target.dataDir, args, env } : { args: [...storeArgs(target), ...args], env };
}

export { withPg };

function sqlitePath(dataDir: string): string {
  return join(dataDir, 'bucketmeter.db');
}

function withSqlite<T>(dataDir: string, run: (db: Database.Database) => T): T {
  const db = new Database(sqlitePath(dataDir), { readonly: true, fileMustExist: true });
  try {
    return run(db);
  } finally {
    db.close();
  }
}

/** Every event of the tenant, by its eventId (`seq:N` for one stored without). One entry per row. */
export async function storedEventIds(target: StoreTarget, tenant: string): Promise<string[]> {
  if (target.backend === 'sqlite') {
    return withSqlite(target.dataDir, (db) =>
      db
        .prepare("SELECT coalesce(e.event_id, 'seq:' || e.seq) FROM events e JOIN tenants t ON t.id = e.tenant WHERE t.name = ?")
        .pluck()
        .all(tenant) as string[],
    );
  }
  return withPg(target.url, async (client) => {
    const { rows } = await client.query<{ id: string }>(
      "SELECT coalesce(e.event_id, 'seq:' || e.seq) AS id FROM events e JOIN tenants t ON t.id = e.tenant_id WHERE t.name = $1",
      [tenant],
    );
    return rows.map((r) => r.id);
  });
}

/** Calls `each` with the eventId of every stored event of the tenant, streamed: there may be millions. */
export async function eachStoredEventId(target: StoreTarget, tenant: string, each: (id: string) => void): Promise<void> {
  if (target.backend === 'postgres') {
    for (const id of await storedEventIds(target, tenant)) each(id);
    return;
  }
  withSqlite(target.dataDir, (db) => {
    const rows = db.prepare("SELECT coalesce(e.event_id, 'seq:' || e.seq) FROM events e JOIN tenants t ON t.id = e.tenant WHERE t.name = ?").pluck().iterate(tenant);
    for (const id of rows) each(id as string);
  });
}

/** How many quarantine entries the tenant has. */
export async function quarantineCount(target: StoreTarget, tenant: string): Promise<number> {
  if (target.backend === 'sqlite') {
    return withSqlite(target.dataDir, (db) => db.prepare('SELECT count(*) FROM quarantine q JOIN tenants t ON t.id = q.tenant WHERE t.name = ?').pluck().get(tenant) as number);
  }
  return withPg(target.url, async (client) => {
    const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM quarantine q JOIN tenants t ON t.id = q.tenant_id WHERE t.name = $1', [tenant]);
    return Number(rows[0]!.n);
  });
}

/** The tenant's quarantine entries, counted by problem code. */
export async function quarantineCodes(target: StoreTarget, tenant: string): Promise<Tally<string>> {
  const codes = new Tally<string>();
  if (target.backend === 'sqlite') {
    const rows = withSqlite(target.dataDir, (db) => db.prepare('SELECT q.code, count(*) AS n FROM quarantine q JOIN tenants t ON t.id = q.tenant WHERE t.name = ? GROUP BY q.code').all(tenant) as { code: string; n: number }[]);
    for (const { code, n } of rows) codes.add(code, n);
    return codes;
  }
  return withPg(target.url, async (client) => {
    const { rows } = await client.query<{ code: string; n: string }>('SELECT q.code, count(*) AS n FROM quarantine q JOIN tenants t ON t.id = q.tenant_id WHERE t.name = $1 GROUP BY q.code', [tenant]);
    for (const { code, n } of rows) codes.add(code, Number(n));
    return codes;
  });
}

/** SQLite's own consistency check of the whole file ("ok" when sound). */
export function sqliteIntegrity(dataDir: string): string {
  return withSqlite(dataDir, (db) => (db.pragma('integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check).join('; '));
}

export interface Audit {
  /** Acknowledged (2xx) but not stored. */
  lost: string[];
  /** Stored more than once. */
  doubled: string[];
  /** Stored but never sent. */
  unsent: string[];
  /** Stored, sent, but never acknowledged (in flight when the server died or the store failed): allowed. */
  storedUnacknowledged: number;
}

/** stored ⊆ sent, acknowledged ⊆ stored, each at most once. */
export function audit(sent: ReadonlySet<string>, acknowledged: ReadonlySet<string>, stored: readonly string[]): Audit {
  const seen = new Set<string>();
  const doubled: string[] = [];
  const unsent: string[] = [];
  let storedUnacknowledged = 0;
  for (const id of stored) {
    if (seen.has(id)) doubled.push(id);
    seen.add(id);
    if (!sent.has(id)) unsent.push(id);
    else if (!acknowledged.has(id)) storedUnacknowledged++;
  }
  const lost = [...acknowledged].filter((id) => !seen.has(id));
  return { lost, doubled, unsent, storedUnacknowledged };
}
