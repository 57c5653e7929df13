/**
 * The stores every black-box suite runs against: the same tests, once per backend, so the two cannot
 * drift apart. PostgreSQL runs only with TEST_DATABASE_URL, and says loudly when it is skipped.
 */
import { join } from 'node:path';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { Store } from '../../src/store/types.js';
import type { SameData } from './same-data.js';
import { dropScratchDatabases, scratchDatabase, scratchDir, tempDir } from './scratch.js';

export { withPg } from './scratch.js';

export interface Backend {
  name: 'sqlite' | 'postgres';
  /** false, or why this backend is skipped here. */
  skip: string | false;
  /** Flags selecting a fresh, empty store, for `serve` and every CLI command alike. */
  fresh(): Promise<string[]>;
}

export const BACKENDS: Backend[] = [
  { name: 'sqlite', skip: false, fresh: async () => ['--data-dir', tempDir()] },
  {
    name: 'postgres',
    skip: process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set: PostgreSQL run of this suite SKIPPED',
    fresh: async () => ['--database-url', (await scratchDatabase()).url],
  },
];

/** Drops the databases this process created; call from a top-level after(). */
export const dropFreshStores = dropScratchDatabases;

/** A store opened in this process, with its data's address (to open it again) and its close (its scratch file or database gone). */
export interface OpenedStore {
  store: Store;
  data: SameData;
  close(): Promise<void>;
}

/** The same two stores for suites that drive the services in this process; `name`: of the scratch directory and SQLite file. */
export function openedBackends(name: string, poolMax = 2): { name: Backend['name']; skip: string | false; open(): Promise<OpenedStore> }[] {
  return [
    {
      name: 'sqlite',
      skip: false,
      open: async () => {
        const temp = scratchDir(`bm-${name}-`);
        const path = join(temp.dir, `${name}.db`);
        const store = await openSqliteStore({ path });
        const close = async () => {
          await store.close();
          await temp.remove();
        };
        return { store, data: { backend: 'sqlite', path }, close };
      },
    },
    {
      name: 'postgres',
      skip: BACKENDS[1]!.skip,
      open: async () => {
        const { url } = await scratchDatabase();
        const store = await openPostgresStore({ url, poolMax });
        const close = async () => {
          await store.close();
          await dropScratchDatabases();
        };
        return { store, data: { backend: 'postgres', url }, close };
      },
    },
  ];
}
