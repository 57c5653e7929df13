/**
 * The stores every black-box suite runs against: the same tests, once per backend, so the two cannot
 * drift apart. PostgreSQL runs only with TEST_DATABASE_URL, and says loudly when it is skipped.
 */
import { dropScratchDatabases, scratchDatabase, tempDir } from './scratch.js';

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
