/**
 * Keys and tenants: keys at rest only as hashes, revocation seen by every node within 5 s, the per-key
 * rate limit (and none by default), no key in any log line even at trace level, and no way for tenant
 * A to read or write tenant B's events through any endpoint.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Backend } from '../../test/support/backends.js';
import { minimalWireEvent } from '../../test/support/events.js';
import { createKey, request, runCli, startServer } from '../../test/support/server.js';
import type { CliResult, ServerProcess } from '../../test/support/server.js';
import { BATCH_PATHS, SINGLE_PATHS } from '../support/hostile.js';
import { Tally, report } from '../support/measure.js';
import { exchange, sendAll } from '../support/raw-http.js';
import { freshTarget, quarantineCount, serverOptions, storeArgs, storedEventIds, withPg } from '../support/stores.js';
import type { StoreTarget } from '../support/stores.js';

const TRACE = { LOG_LEVEL: 'trace' };
/** Requests sent at once to a node without --rate-limit: none may be refused. */
const UNLIMITED_BURST = 200;

export interface KeysOptions {
  target: StoreTarget;
  /** Server processes sharing the store (more than one needs PostgreSQL). */
  nodes: number;
  /** A store for the rate-limited node (SQLite: its own file, so that two processes never share one). */
  rateLimitTarget: StoreTarget;
}

/** Nodes sharing one store: several only where the store is shared by design. */
export const KEYS_NODES: Record<Backend['name'], number> = { sqlite: 1, postgres: 2 };

/** Fresh stores for a run on the backend. */
export async function keysOptions(of: Backend): Promise<KeysOptions> {
  const target = await freshTarget(of);
  // Two processes never share one SQLite file: the rate-limited node gets its own.
  return { target, rateLimitTarget: of.name === 'sqlite' ? await freshTarget(of) : target, nodes: KEYS_NODES[of.name] };
}

/**
 * Everything a key could be found as in bytes: itself, without its prefix (the public key id and its
 * dot, or an older key's `bmk_`), its random bytes (raw, hex), as a JSON byte array.
 */
function forms(key: string): { name: string; needle: Buffer }[] {
  const dot = key.indexOf('.');
  const secret = dot === -1 ? key.slice(4) : key.slice(dot + 1);
  const random = Buffer.from(secret, dot === -1 ? 'base64url' : 'base64');
  const ascii = Buffer.from(key);
  return [
    { name: 'key', needle: ascii },
    { name: 'key without prefix', needle: Buffer.from(secret) },
    { name: 'random bytes', needle: random },
    { name: 'random bytes as hex', needle: Buffer.from(random.toString('hex')) },
    { name: 'key as hex', needle: Buffer.from(ascii.toString('hex')) },
    { name: 'key as base64', needle: Buffer.from(ascii.toString('base64')) },
    { name: 'key as a JSON byte array', needle: Buffer.from([...ascii].join(',')) },
  ];
}

function findKeys(haystack: Buffer, keys: readonly string[]): string[] {
  return keys.flatMap((key) => forms(key).filter(({ needle }) => haystack.includes(needle)).map(({ name }) => `${name} of ${key.slice(0, 8)}…`));
}

/** The whole stored state as bytes: SQLite's files, or every PostgreSQL table as text (bytea as hex). */
async function storeBytes(target: StoreTarget): Promise<Buffer> {
  if (target.backend === 'sqlite') return Buffer.concat(readdirSync(target.dataDir).map((name) => readFileSync(join(target.dataDir, name))));
  return withPg(target.url, async (client) => {
    const { rows: tables } = await client.query<{ name: string }>("SELECT quote_ident(table_name) AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'");
    const parts: Buffer[] = [];
    for (const { name } of tables) {
      const { rows } = await client.query<{ row: string }>(`SELECT t::text AS row FROM ${name} t`);
      for (const { row } of rows) parts.push(Buffer.from(row));
    }
    return Buffer.concat(parts);
  });
}

async function storedHashes(target: StoreTarget): Promise<string[]> {
  if (target.backend === 'postgres') {
    return withPg(target.url, async (client) => (await client.query<{ hash: Buffer }>('SELECT hash FROM api_keys')).rows.map((r) => r.hash.toString('hex')));
  }
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(join(target.dataDir, 'bucketmeter.db'), { readonly: true });
  try {
    return (db.prepare('SELECT hash FROM api_keys').pluck().all() as Buffer[]).map((h) => h.toString('hex'));
  } finally {
    db.close();
  }
}

async function keyId(target: StoreTarget, tenant: string, cli: CliResult[]): Promise<string> {
  const list = await runCli(['keys', 'list', ...storeArgs(target)]);
  cli.push(list);
  assert.equal(list.code, 0, list.stderr);
  return list.stdout.split('\n').find((line) => line.split(/\s+/)[1] === tenant)!.split(/\s+/)[0]!;
}

const event = (eventId: string, extra: Record<string, unknown> = {}) => ({ ...minimalWireEvent('GetObject'), eventId, ...extra });

/** Every eventId the key's tenant sees through /v1/events with this query. */
async function visible(server: ServerProcess, key: string, query = ''): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const sep: string = query === '' ? '?' : '&';
    const page = await request(`${server.url}/v1/events${query}${cursor ? `${sep}cursor=${encodeURIComponent(cursor)}` : ''}`, { key });
    assert.equal(page.status, 200, page.text);
    ids.push(...(page.json.events as { eventId: string }[]).map((e) => e.eventId));
    cursor = page.json.nextCursor as string | null;
  } while (cursor);
  return ids;
}

export async function keysScenario(t: TestContext, options: KeysOptions): Promise<void> {
  const { target } = options;
  const cli: CliResult[] = [];
  const keys = {
    a: await createKey('tenant-a', storeArgs(target)),
    b: await createKey('tenant-b', storeArgs(target)),
    revoked: await createKey('tenant-revoked', storeArgs(target)),
  };
  const limitedKey = await createKey('tenant-limited', storeArgs(options.rateLimitTarget));
  const otherLimitedKey = await createKey('tenant-limited-2', storeArgs(options.rateLimitTarget));
  const validKeys = [...Object.values(keys), limitedKey, otherLimitedKey];
  // Keys that are not valid but could be (a typo of a real one): they must not be logged either.
  const invalidKeys = [keys.a.slice(0, -1) + (keys.a.endsWith('A') ? 'B' : 'A'), 'bmk_' + 'Q'.repeat(43), keys.b.toUpperCase()];

  // Each server is killed after the test whatever happens; the graceful stop below is for the logs.
  const start = async (store: StoreTarget, args: string[]) => {
    const server = await startServer(serverOptions(store, args, TRACE));
    t.after(() => server.kill());
    return server;
  };
  const nodes: ServerProcess[] = [];
  for (let i = 0; i < options.nodes; i++) nodes.push(await start(target, ['--request-timeout-ms', '2000']));
  const limited = await start(options.rateLimitTarget, ['--rate-limit', '10']);
  const all = [...nodes, limited];
  const node = (i: number) => nodes[i % nodes.length]!;
  const figures: Record<string, unknown> = {};
  try {
    for (const server of all) assert.doesNotMatch(server.output(), /No API key existed/, 'keys made by the CLI before the first start: no key printed');

    // ---- Tenants: A can neither read nor write B's events, on any endpoint, through any node. ----
    const aSent: string[] = [];
    const bSent = ['shared-1', 'shared-2', 'b-only-1', 'b-only-2'];
    assert.equal((await request(`${node(0).url}/s3`, { key: keys.b, body: event('shared-1', { customerId: 'cust-b' }) })).status, 200);
    assert.equal((await request(`${node(1).url}/s3/batch`, { key: keys.b, body: [event('shared-2', { customerId: 'cust-b' }), event('b-only-1'), event('b-only-2')] })).json.accepted, 3);
    // The same ids in A are new events of A: no duplicate answer tells A that B has them.
    const single = await request(`${node(1).url}/s3`, { key: keys.a, body: event('shared-1', { tenant: 'tenant-b', tenantId: 2 }) });
    assert.deepEqual(single.json, { eventId: 'shared-1', duplicate: false });
    aSent.push('shared-1');
    // A tenant named in the query is refused (no route takes it), and kept in A's quarantine; one in headers is ignored.
    const asB = await request(`${node(0).url}/storage/batch?tenant=tenant-b`, { key: keys.a, body: [event('shared-2', { customerId: 'cust-b' }), event('a-only')] });
    assert.equal(asB.status, 400);
    assert.equal(asB.json.code, 'BM_ERR_QUERY_INVALID');
    const batch = await request(`${node(0).url}/storage/batch`, { key: keys.a, body: [event('shared-2', { customerId: 'cust-b' }), event('a-only')], headers: { 'x-tenant': 'tenant-b', 'x-tenant-id': '2' } });
    assert.deepEqual(batch.json, { accepted: 2, duplicates: 0, rejected: [], rejectedCount: 0 });
    aSent.push('shared-2', 'a-only');
    for (const [i, path] of [...SINGLE_PATHS, ...BATCH_PATHS].entries()) {
      const id = `a-path-${i}`;
      const reply = await request(`${node(i).url}${path}`, { key: keys.a, body: BATCH_PATHS.includes(path) ? [event(id)] : event(id) });
      assert.equal(reply.status, 200, `${path}: ${reply.text}`);
      aSent.push(id);
    }
    const bPage = await request(`${node(0).url}/v1/events?limit=1`, { key: keys.b });
    const bCursor = bPage.json.nextCursor as string;
    assert.ok(bCursor, "B's first page has a cursor");
    // B's cursor given by A: refused (SQLite seals cursors to their tenant), or a place in A's own events.
    const withBCursor = await request(`${node(0).url}/v1/events?cursor=${encodeURIComponent(bCursor)}`, { key: keys.a });
    if (withBCursor.status === 400) assert.equal(withBCursor.json.code, 'BM_ERR_QUERY_INVALID');
    else assert.deepEqual((withBCursor.json.events as { eventId: string }[]).filter((e) => !aSent.includes(e.eventId)), [], "A sees only its own events (B's cursor)");
    const queries = ['', '?customerId=cust-b', '?action=GetObject', '?from=1970-01-01T00:00:00Z&to=9999-12-31T23:59:59Z', '?limit=1'];
    for (const [i, query] of queries.entries()) {
      const seen = await visible(node(i), keys.a, query);
      const foreign = seen.filter((id) => !aSent.includes(id));
      assert.deepEqual(foreign, [], `A sees only its own events (${query || 'no query'})`);
    }
    assert.deepEqual((await visible(node(0), keys.a)).sort(), [...aSent].sort(), 'A sees all of its own');
    assert.deepEqual((await visible(node(1), keys.b)).sort(), [...bSent].sort(), 'B sees exactly its own');
    assert.deepEqual((await storedEventIds(target, 'tenant-b')).sort(), [...bSent].sort(), "B's rows hold only B's events");
    assert.deepEqual((await storedEventIds(target, 'tenant-a')).sort(), [...aSent].sort(), "A's rows hold only A's events");
    // Keyless and shared endpoints hold no tenant data.
    assert.deepEqual((await request(`${node(0).url}/healthz`)).json, { status: 'ok', store: target.backend });
    for (const path of ['/ping', '/storage/recommendedBatchSize', '/s3/recommendedBatchSize']) assert.equal((await request(`${node(1).url}${path}`, { key: keys.a })).status, 200);
    // Quarantine (the CLI; no HTTP endpoint) is per tenant too.
    await request(`${node(0).url}/s3`, { key: keys.a, raw: '{"broken": ', headers: { 'content-type': 'application/json' } });
    await request(`${node(1).url}/s3`, { key: keys.b, raw: '["not an object"]', headers: { 'content-type': 'application/json' } });
    const exported = await runCli(['quarantine', 'export', '--tenant', 'tenant-a', ...storeArgs(target)]);
    cli.push(exported);
    const entries = exported.stdout.trim().split('\n').map((line) => JSON.parse(line) as { tenant: string; body: string });
    assert.deepEqual(
      entries.map((e) => [e.tenant, e.body]),
      [
        ['tenant-a', JSON.stringify([event('shared-2', { customerId: 'cust-b' }), event('a-only')])],
        ['tenant-a', '{"broken": '],
      ],
    );
    figures.tenantEndpointsTried = SINGLE_PATHS.length + BATCH_PATHS.length + queries.length + 4;

    // ---- Revocation: every node refuses the key within 5 s (key cache: 2 s). ----
    for (const server of nodes) assert.equal((await request(`${server.url}/ping`, { key: keys.revoked })).status, 200);
    const revokedId = await keyId(target, 'tenant-revoked', cli);
    let polling = true;
    const refusedAt = new Map<ServerProcess, number>();
    const pollers = nodes.map(async (server) => {
      while (polling) {
        // No answer (0) is neither refused nor accepted: it leaves the state as it was.
        const status = await request(`${server.url}/ping`, { key: keys.revoked }).then((r) => r.status, () => 0);
        if (status === 401 && !refusedAt.has(server)) refusedAt.set(server, Date.now());
        if (status === 200) refusedAt.delete(server);
        await sleep(50);
      }
    });
    try {
      // From the moment the revocation is committed (the command returned): starting a process and
      // connecting to the store is the machine's speed, not the key cache's bound.
      const commandStarted = Date.now();
      const revoke = await runCli(['keys', 'revoke', revokedId, ...storeArgs(target)]);
      const revokedAt = Date.now();
      figures.revokeCommandMs = revokedAt - commandStarted;
      cli.push(revoke);
      assert.equal(revoke.code, 0, revoke.stderr);
      while (refusedAt.size < nodes.length && Date.now() - revokedAt < 10_000) await sleep(50);
      await sleep(500); // and they stay refused
      const revocationMs = nodes.map((server) => (refusedAt.has(server) ? refusedAt.get(server)! - revokedAt : Infinity));
      figures.revocationMsPerNode = revocationMs;
      assert.ok(revocationMs.every((ms) => ms <= 5000), `every node refuses the revoked key within 5 s of its revocation: ${revocationMs.join(', ')} ms`);
    } finally {
      polling = false;
      await Promise.all(pollers);
    }

    // ---- No rate limit by default: a burst on a node started without --rate-limit is served whole. ----
    for (const [i, server] of nodes.entries()) {
      const burstStarted = Date.now();
      const replies = await Promise.all(Array.from({ length: UNLIMITED_BURST }, () => request(`${server.url}/ping`, { key: keys.a })));
      const unlimited = new Tally<number>();
      for (const reply of replies) unlimited.add(reply.status);
      figures[`unlimitedBurstNode${i}`] = { requests: UNLIMITED_BURST, ms: Date.now() - burstStarted, statuses: unlimited };
      assert.deepEqual(unlimited.toJSON(), { 200: UNLIMITED_BURST }, `no limit without --rate-limit: ${JSON.stringify(unlimited)}`);
    }

    // ---- Rate limit: 429 + Retry-After past 10 requests a second per key; other keys unaffected; nothing quarantined. ----
    const statuses = new Tally<number>();
    let quarantinable = 0;
    const burst = await Promise.all(Array.from({ length: 60 }, (_, i) => request(`${limited.url}/s3`, { key: limitedKey, raw: `{"not": "an event ${i}"}`, headers: { 'content-type': 'application/json' } })));
    for (const reply of burst) {
      statuses.add(reply.status);
      if (reply.status === 400) quarantinable++;
      if (reply.status === 429) {
        assert.equal(reply.json.code, 'BM_ERR_RATE_LIMITED');
        assert.match(reply.headers.get('content-type') ?? '', /^application\/problem\+json/);
        assert.match(reply.headers.get('retry-after') ?? '', /^\d+$/);
      }
    }
    assert.ok((statuses.get(429) ?? 0) > 0 && quarantinable > 0, `some over the limit, some not: ${JSON.stringify(statuses)}`);
    assert.deepEqual([...statuses.keys()].sort(), [400, 429]);
    assert.equal((await request(`${limited.url}/ping`, { key: otherLimitedKey })).status, 200, 'another key is not limited');
    assert.equal(await quarantineCount(options.rateLimitTarget, 'tenant-limited'), quarantinable, 'what was refused with 429 was never read, so not quarantined');
    await sleep(Number(burst.find((r) => r.status === 429)!.headers.get('retry-after')) * 1000);
    assert.equal((await request(`${limited.url}/ping`, { key: limitedKey })).status, 200, 'allowed again after Retry-After');
    figures.rateLimitBurst = statuses;

    // ---- Errors of every kind with keys in the request, for the log scan below. ----
    const target0 = node(0);
    // The server closes a connection whose body it stopped reading; the client may see that as an error.
    const tooLarge = (key: string) => request(`${target0.url}/s3`, { key, raw: 'x'.repeat(11 * 1024 * 1024), headers: { 'content-type': 'application/json' } }).catch(() => undefined);
    await tooLarge(keys.a);
    await tooLarge(invalidKeys[0]!);
    for (const key of [...validKeys, ...invalidKeys]) {
      await request(`${target0.url}/ping`, { key });
      await request(`${target0.url}/s3`, { key, raw: '{', headers: { 'content-type': 'application/json' } });
      await request(`${target0.url}/s3`, { key, raw: 'x', headers: { 'content-type': 'text/plain' } });
      await request(`${target0.url}/nowhere`, { key });
      await request(`${target0.url}/v1/events?limit=0`, { key });
      await request(`${target0.url}/s3%`, { key });
      const raw = (text: string, waitMs = 3000) => exchange(target0.port, { write: sendAll(Buffer.from(text, 'latin1')), waitMs, endAfterMs: 1000 });
      await raw(`GET /ping HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nBad Header: ${key}\r\n\r\n`);
      await raw(`GET /ping HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nX-Big: ${'x'.repeat(20_000)}\r\n\r\n`);
      await raw(`POST /s3 HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Length: abc\r\n\r\n{}`);
      await raw(`POST /s3 HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nExpect: nothing\r\nContent-Length: 2\r\n\r\n{}`);
      await raw(`CONNECT ${key}:443 HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n\r\n`);
      await raw(`GET /ping HTTP/1.1\r\nX-API-Key: ${key}\r\n\r\n`);
    }
    // A request whose body never comes: cut by the request timeout (408), key in its headers.
    await exchange(target0.port, { write: sendAll(Buffer.from(`POST /s3 HTTP/1.1\r\nHost: x\r\nX-API-Key: ${keys.a}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`)), waitMs: 6000 });

    // ---- At rest: only SHA-256 hashes. ----
    const atRest = await storeBytes(target);
    assert.deepEqual(findKeys(atRest, [...validKeys, ...invalidKeys]), [], 'no key in the store, in any form');
    const hashes = new Set(await storedHashes(target));
    for (const key of Object.values(keys)) assert.ok(hashes.has(createHash('sha256').update(key).digest('hex')), 'the key is stored as its SHA-256 hash');
    figures.storeBytesScanned = atRest.length;
  } finally {
    // Gracefully, so that the logs are complete; killed if that takes more than 10 s.
    for (const server of all) await server.stop(10_000);
  }

  // ---- Logs: no key, in any form, in anything a server or a command wrote (but `keys create`'s one line). ----
  const logs = Buffer.from([...all.map((s) => s.output()), ...cli.flatMap((c) => [c.stdout, c.stderr])].join('\n'));
  assert.match(logs.toString(), /"level":20/, 'the servers logged below info (started at trace)');
  assert.match(logs.toString(), /request refused/, 'refusals were logged');
  assert.deepEqual(findKeys(logs, [...validKeys, ...invalidKeys]), [], 'no key in any log line');
  report(t, `keys/${target.backend}`, { nodes: options.nodes, ...figures, logBytesScanned: logs.length, logLines: logs.toString().split('\n').length, keysLookedFor: validKeys.length + invalidKeys.length });
}
