/**
 * Scratch space for tests, made one way everywhere: temporary directories, and PostgreSQL databases
 * on the TEST_DATABASE_URL server that the test file drops when it is done (dropScratchDatabases in
 * a top-level after()).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const dirs: string[] = [];

/** A temporary directory, removed when this process exits (servers the test started have stopped by then). */
export function tempDir(prefix = 'bm-test-'): string {
  if (dirs.length === 0) process.once('exit', removeDirs);
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

function removeDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A temporary directory and the way to remove it. */
export function scratchDir(prefix = 'bm-test-'): { dir: string; remove(): Promise<void> } {
  const dir = tempDir(prefix);
  return { dir, remove: async () => rmSync(dir, { recursive: true, force: true }) };
}

const BASE_URL = process.env.TEST_DATABASE_URL;
const created: string[] = [];

/** A fresh, empty database on the TEST_DATABASE_URL server (which must be set). */
export async function scratchDatabase(): Promise<{ name: string; url: string }> {
  if (!BASE_URL) throw new Error('scratchDatabase needs TEST_DATABASE_URL');
  const name = `bm_t_${randomBytes(6).toString('hex')}`;
  await withPg(BASE_URL, (client) => client.query(`CREATE DATABASE ${name}`));
  created.push(name);
  const url = new URL(BASE_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

/** Drops the databases this process created; call from a top-level after(). */
export async function dropScratchDatabases(): Promise<void> {
  if (created.length === 0 || !BASE_URL) return;
  await withPg(BASE_URL, async (client) => {
    for (const name of created.splice(0)) await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
}

/** Runs `run` on a connection of its own to `url`, closed afterwards. */
export async function withPg<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}
