/**
 * The store contract against PostgreSQL, once per write path, in a database of its own (created on the TEST_DATABASE_URL
 * server, dropped at the end). Without TEST_DATABASE_URL the suite is registered as skipped.
 */
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { Client } from 'pg';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { storeContract } from './contract.js';

const BASE_URL = process.env.TEST_DATABASE_URL;

async function onServer(sql: string): Promise<void> {
  const client = new Client({ connectionString: BASE_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

if (BASE_URL === undefined || BASE_URL === '') {
  describe('store contract: postgres', () => {
    it('runs against PostgreSQL', { skip: 'TEST_DATABASE_URL is not set: the PostgreSQL store contract was NOT run' }, () => {});
  });
} else {
  const database = `bm_test_${randomBytes(6).toString('hex')}`;
  const url = new URL(BASE_URL);
  url.pathname = `/${database}`;
  let created: Promise<void> | undefined;

  // Units take one of two write paths by size (encode.ts): each run forces one of them for every unit.
  for (const [name, copyMinEvents] of [['postgres, one statement', Infinity], ['postgres, COPY', 1]] as const) {
    storeContract(name, async () => {
      created ??= onServer(`CREATE DATABASE ${database}`);
      await created;
      const store = await openPostgresStore({ url: url.toString(), poolMax: 8, copyMinEvents });
      return { store, cleanup: () => store.close() };
    });
  }

  after(async () => {
    if (created !== undefined) await onServer(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  });
}
