/**
 * Key scopes, `bucketmeter usage` and the proof paths: reconcile and `usage verify` agree on an
 * honest store; rollups damaged on purpose are found by verify and mended by rebuild, while
 * ingestion goes on, and the running server's answers kept from them (usage pages, priced cost
 * months) are computed again at once after it. Both stores.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { BACKENDS, dropFreshStores, withPg } from '../support/backends.js';
import { createKey, request, runCli, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';
import { SHAPES } from '../../src/usage/shapes.js';
import { attachDerived } from '../../src/store/sqlite/derived.js';

const event = (i: number, extra: Record<string, unknown> = {}) => ({
  action: i % 3 === 0 ? 'PutObject' : 'GetObject',
  timestamp: `2026-03-0${1 + (i % 3)}T${String(i % 24).padStart(2, '0')}:15:00Z`,
  provider: 'aws',
  bucket: `b${i % 2}`,
  objectKey: 'k',
  bytes: 100 + i,
  customerId: `c${i % 4}`,
  clientId: `d${i % 5}`,
  eventId: `ev-${i}`,
  ...extra,
});

for (const backend of BACKENDS) {
  describe(`usage CLI, scopes, verify and rebuild (${backend.name})`, { skip: backend.skip }, () => {
    let server: ServerProcess;
    let storeArgs: string[];

    before(async () => {
      storeArgs = await backend.fresh();
      server = await startServer({ args: storeArgs });
    });
    after(async () => {
      await server.stop();
      await dropFreshStores();
    });

    /** Runs SQL on the store behind the server, as an operator (or a bug) would. */
    async function damage(sql: string): Promise<void> {
      if (backend.name === 'sqlite') {
        const path = join(storeArgs[1]!, 'bucketmeter.db');
        const db = new Database(path);
        db.pragma('busy_timeout = 5000');
        // The rollups are in the derived file.
        attachDerived(db, path);
        db.exec(sql);
        db.close();
      } else {
        await withPg(storeArgs[1]!, (client) => client.query(sql));
      }
    }

    it('scopes: ingest keys send, read keys read, each refused the other with 403', async () => {
      const ingest = await createKey('scoped', [...storeArgs, '--scope', 'ingest']);
      const read = await createKey('scoped', [...storeArgs, '--scope', 'read']);
      const all = await createKey('scoped', storeArgs);
      const q = `${server.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z`;
      assert.equal((await request(`${server.url}/s3`, { key: ingest, body: event(1) })).status, 200);
      assert.equal((await request(`${server.url}/ping`, { key: ingest })).status, 200);
      assert.equal((await request(`${server.url}/s3/recommendedBatchSize`, { key: ingest })).status, 200);
      for (const path of [q, `${server.url}/v1/events`, `${server.url}/v1/usage/reconcile?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z`]) {
        const refused = await request(path, { key: ingest });
        assert.equal(refused.status, 403, path);
        assert.equal(refused.json.code, 'BM_ERR_AUTH_SCOPE');
      }
      assert.equal((await request(q, { key: read })).status, 200);
      const write = await request(`${server.url}/s3`, { key: read, body: event(2) });
      assert.equal(write.status, 403);
      assert.equal(write.json.code, 'BM_ERR_AUTH_SCOPE');
      assert.equal((await request(`${server.url}/ping`, { key: read })).status, 403);
      assert.equal((await request(q, { key: all })).status, 200);
      assert.equal((await request(`${server.url}/s3`, { key: all, body: event(3) })).status, 200);
      const list = await runCli(['keys', 'list', ...storeArgs]);
      assert.match(list.stdout, /^ID\s+TENANT\s+SCOPE\s+CREATED/);
      const scopes = list.stdout.split('\n').filter((l) => /\sscoped\s/.test(l)).map((l) => l.split(/\s+/)[2]);
      assert.deepEqual(scopes.sort(), ['all', 'ingest', 'read']);
      const bad = await runCli(['keys', 'create', '--tenant', 'x', '--scope', 'admin', ...storeArgs]);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /--scope takes ingest, read, all/);
    });

    it('`usage` prints the API answer as a table, CSV or JSON', async () => {
      const key = await createKey('cli', storeArgs);
      const sent = await request(`${server.url}/s3/batch`, { key, body: [0, 1, 2, 3, 4, 5].map((i) => event(i)) });
      assert.equal(sent.json.accepted, 6);
      const args = ['usage', '--tenant', 'cli', '--from', '2026-03-01T00:00:00Z', '--to', '2026-03-04T00:00:00Z', '--granularity', 'day', '--groupBy', 'customerId', '--customerId', 'c0', '--customerId', 'c1', ...storeArgs];
      const api = await request(`${server.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-04T00:00:00Z&granularity=day&groupBy=customerId&customerId=c0&customerId=c1`, { key });
      const json = await runCli([...args, '--json']);
      assert.equal(json.code, 0, json.stderr);
      assert.deepEqual(JSON.parse(json.stdout), api.json);
      const csv = await runCli([...args, '--csv']);
      const apiCsv = await request(`${server.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-04T00:00:00Z&granularity=day&groupBy=customerId&customerId=c0&customerId=c1&format=csv`, { key });
      assert.equal(csv.stdout, apiCsv.text);
      const table = await runCli(args);
      assert.equal(table.code, 0, table.stderr);
      assert.match(table.stdout, /^START\s+END\s+customerId\s+requests\s+readBytes\s+billableEgressBytes\s+writtenBytes\n2026-03-01T00:00:00Z\s+2026-03-02T00:00:00Z\s+c0\s+1\s+0\s+0\s+100\n/);
      const bad = await runCli(['usage', '--tenant', 'cli', '--from', 'soon', ...storeArgs]);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /--from: from must be an ISO 8601 time/);
      assert.match(bad.stderr, /--to: to is required/);
    });

    it('verify finds rollups damaged on purpose; rebuild mends them while ingestion runs', async () => {
      const key = await createKey('audit', storeArgs);
      const range = ['--from', '2026-03-01T00:00:00Z', '--to', '2026-03-05T00:00:00Z'];
      const batch = Array.from({ length: 200 }, (_, i) => event(i));
      assert.equal((await request(`${server.url}/s3/batch`, { key, body: batch })).json.accepted, 200);
      // Resent (duplicates) and one invalid: receipts count them, rollups do not.
      const again = await request(`${server.url}/s3/batch`, { key, body: [...batch.slice(0, 10), { ...event(999), bytes: -1 }] });
      assert.equal(again.json.duplicates, 10);

      const clean = await runCli(['usage', 'verify', '--tenant', 'audit', ...range, ...storeArgs]);
      assert.equal(clean.code, 0, clean.stdout + clean.stderr);
      const before = await request(`${server.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-05T00:00:00Z&groupBy=customerId`, { key });

      const audit = `tenant = (SELECT id FROM tenants WHERE name = 'audit')`;
      await damage(`UPDATE usage_customer_hour SET requests = requests + 7 WHERE ${audit}`);
      await damage(`DELETE FROM usage_tenant WHERE ${audit} AND hour = ${Date.parse('2026-03-02T04:00:00Z') / 3600_000}`);
      await damage(`UPDATE usage_customer_day SET written_bytes = written_bytes + 1 WHERE ${audit} AND day = ${Date.parse('2026-03-03T00:00:00Z') / 86400_000}`);
      const found = await runCli(['usage', 'verify', '--tenant', 'audit', ...range, ...storeArgs]);
      assert.equal(found.code, 1, found.stdout);
      assert.match(found.stdout, /rollup customer_hour: requests = requests of the events/);
      assert.match(found.stdout, /rollup tenant: requests/);
      assert.match(found.stdout, /rollup customer_day: writtenBytes/);
      const reconcile = await request(`${server.url}/v1/usage/reconcile?from=2026-03-01T00:00:00Z&to=2026-03-05T00:00:00Z`, { key });
      assert.ok(reconcile.json.differences.length > 0);
      assert.ok(reconcile.json.differences.some((d: { day: string; check: string }) => d.day === '2026-03-02' && d.check.startsWith('rollup tenant:')));

      // Ingestion goes on during the rebuild: late events for the same days, from another sender.
      let sending = true;
      let n = 1000;
      const sender = (async () => {
        while (sending) {
          const reply = await request(`${server.url}/s3/batch`, { key, body: [event(n++), event(n++), event(n++)] });
          assert.equal(reply.status, 200, reply.text);
        }
      })();
      const rebuilt = await runCli(['usage', 'rebuild', '--tenant', 'audit', ...range, ...storeArgs]);
      sending = false;
      await sender;
      assert.equal(rebuilt.code, 0, rebuilt.stderr);
      const mended = await runCli(['usage', 'verify', ...range, ...storeArgs]);
      assert.equal(mended.code, 0, mended.stdout + mended.stderr);
      const afterRebuild = await request(`${server.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-05T00:00:00Z&groupBy=customerId`, { key });
      const requests = (reply: typeof before) => reply.json.rows.reduce((sum: number, r: { requests: number }) => sum + r.requests, 0);
      assert.equal(requests(afterRebuild), requests(before) + (n - 1000), 'the events sent during the rebuild are counted once');
    });

    it("the server's answers kept from damaged rollups are computed again after `usage rebuild` in another process, of the tenant and of every tenant", async () => {
      const key = await createKey('kept', storeArgs);
      const range = ['--from', '2026-03-01T00:00:00Z', '--to', '2026-04-01T00:00:00Z'];
      const sent = 60;
      assert.equal((await request(`${server.url}/s3/batch`, { key, body: Array.from({ length: sent }, (_, i) => event(i)) })).json.accepted, sent);
      const usage = `${server.url}/v1/usage?from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z&groupBy=customerId`;
      const costs = `${server.url}/v1/costs?from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z&groupBy=customerId`;
      const requests = async () => (await request(usage, { key })).json.rows.reduce((sum: number, r: { requests: number }) => sum + r.requests, 0);
      const costRows = async () => (await request(costs, { key })).json.rows;
      for (const tenant of [['--tenant', 'kept'], []]) {
        // Read first: a read folds what is pending, so the rows to damage are there.
        assert.equal(await requests(), sent + (tenant.length === 0 ? 1 : 0));
        // Every shape but tenant_day: it holds the event count, which damage there would move by itself.
        for (const shape of SHAPES.filter((s) => s.name !== 'tenant_day')) {
          await damage(`UPDATE ${shape.table} SET requests = requests + 7 WHERE tenant = (SELECT id FROM tenants WHERE name = 'kept')`);
        }
        // One more event of the month: the server computes its answers from the damaged rows, and keeps them.
        assert.equal((await request(`${server.url}/s3`, { key, body: event(500 + tenant.length) })).status, 200);
        const damagedRequests = await requests();
        assert.ok(damagedRequests > sent + 1, `computed from the damaged rollups: ${damagedRequests}`);
        assert.equal(await requests(), damagedRequests);
        const damagedCosts = await costRows();
        assert.deepEqual(await costRows(), damagedCosts);

        const rebuilt = await runCli(['usage', 'rebuild', ...tenant, ...range, ...storeArgs]);
        assert.equal(rebuilt.code, 0, rebuilt.stderr);
        const counted = sent + (tenant.length === 0 ? 2 : 1);
        assert.equal(await requests(), counted, `computed again after the rebuild of ${tenant.length === 0 ? 'every tenant' : 'the tenant'}`);
        const fresh = await runCli(['costs', '--tenant', 'kept', ...range, '--groupBy', 'customerId', '--json', ...storeArgs]);
        assert.equal(fresh.code, 0, fresh.stderr);
        const priced = await costRows();
        // Costs read the events, not the rollups: the damage never moved them.
        assert.deepEqual(priced, damagedCosts, 'the month priced from the events');
        assert.deepEqual(priced, JSON.parse(fresh.stdout).rows, 'as another process prices it');
      }
    });
  });
}
