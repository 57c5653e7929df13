/**
 * The stores every black-box suite runs against: the same tests, once per backend, so the two cannot
 * drift apart. PostgreSQL runs only with TEST_DATABASE_URL, and says loudly when it is skipped.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { tempDir } from './server.js';

export interface Backend {
  name: 'sqlite' | 'postgres';
  /** false, or why this backend is skipped here. */
  skip: string | false;
  /** Flags selecting a fresh, empty store, for `serve` and every CLI command alike. */
  fresh(): Promise<string[]>;
}

const BASE_URL = process.env.TEST_DATABASE_URL;
const created: string[] = [];

export const BACKENDS: Backend[] = [
  { name: 'sqlite', skip: false, fresh: async () => ['--data-dir', tempDir()] },
  {
    name: 'postgres',
    skip: BASE_URL ? false : 'TEST_DATABASE_URL is not set: PostgreSQL run of this suite SKIPPED',
    fresh: async () => {
      const name = `bm_t_${randomBytes(6).toString('hex')}`;
      await admin((client) => client.query(`CREATE DATABASE ${name}`));
      created.push(name);
      const url = new URL(BASE_URL!);
      url.pathname = `/${name}`;
      return ['--database-url', url.toString()];
    },
  },
];

/** Drops the databases this process created; call from a top-level after(). */
export async function dropFreshStores(): Promise<void> {
  if (created.length === 0) return;
  await admin(async (client) => {
    for (const name of created.splice(0)) await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
}

function admin(run: (client: pg.Client) => Promise<unknown>): Promise<unknown> {
  return withPg(BASE_URL!, run);
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
