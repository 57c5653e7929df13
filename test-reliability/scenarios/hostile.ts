/**
 * Hostile input against one real server process: many generated malformed and hostile requests
 * through one keep-alive pool, raw HTTP that no client library would send, and a few huge bodies and
 * decompression bombs. Every answer must be a 4xx problem+json (or the 200 a valid part earns), the
 * process must live on with bounded memory, every rejected event must be in quarantine, valid events
 * must come back exactly as sent, and no built-in prototype may have been polluted.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createGzip, createDeflate, deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { Pool } from 'undici';
import { ERRORS } from '../../src/errors.js';
import { createKey, request, runCli, startServer } from '../../test/support/server.js';
import type { ServerProcess } from '../../test/support/server.js';
import { BODY_KINDS, CATEGORIES, EVENT_ID_SLOT, hostileRequests, invalidEventCode, rawRequests } from '../support/hostile.js';
import type { HostileRequest } from '../support/hostile.js';
import { MiB, Tally, report, sampleRss } from '../support/measure.js';
import { PROBE_LINE, probeEnv } from '../support/pollution-probe.js';
import type { PrototypeSnapshot } from '../support/pollution-probe.js';
import { exchange, sendAll, streamBody } from '../support/raw-http.js';
import type { RawResponse } from '../support/raw-http.js';
import { quarantineCodes, serverOptions, storeArgs, storedEventIds } from '../support/stores.js';
import type { StoreTarget } from '../support/stores.js';

export interface HostileOptions {
  target: StoreTarget;
  /** Generated requests sent through the keep-alive pool. */
  requests: number;
  /** Raw-socket requests. */
  raw: number;
  /** How many times each huge body and bomb is sent (all at once). */
  bigTimes: number;
  bigBodyBytes: number;
  bombBytes: number;
  /** Peak RSS allowed, in bytes. */
  maxRss: number;
  connections: number;
}

const TENANT = 'hostile';
/** The server's default --batch-reply-max-rejected: a batch reply details its first rejections only. */
const DETAILED_REJECTIONS = 100;
const BIG_TENANT = 'hostile-big';
const PROBLEM_MEMBERS = new Set(['type', 'title', 'status', 'detail', 'code', 'instance', 'errors', 'limit']);
const FIELD_ERROR_MEMBERS = ['expected', 'message', 'path', 'received'];
/** Members of a stored hostile-content event as /v1/events shows it (customerId only when sent). */
const STORED_MEMBERS = ['action', 'bucket', 'bytes', 'eventId', 'isBillableEgress', 'nested', 'objectKey', 'provider', 'receivedAt', 'timestamp'];

/** What every non-2xx answer must be; the problems found, in words. */
function checkProblem(status: number, contentType: string | undefined, retryAfter: string | undefined, body: Buffer): string[] {
  const found: string[] = [];
  if (!contentType?.startsWith('application/problem+json')) found.push(`content-type ${contentType}`);
  let problem: Record<string, unknown>;
  try {
    problem = JSON.parse(body.toString()) as Record<string, unknown>;
  } catch {
    return [...found, `body is not JSON: ${body.toString().slice(0, 100)}`];
  }
  if (problem.status !== status) found.push(`problem.status ${String(problem.status)}`);
  if (typeof problem.code !== 'string' || !(problem.code in ERRORS)) found.push(`code ${String(problem.code)}`);
  const extra = Object.keys(problem).filter((k) => !PROBLEM_MEMBERS.has(k));
  if (extra.length > 0) found.push(`unexpected members ${extra.join(',')}`);
  if ((status === 429 || status === 503) && retryAfter === undefined) found.push('no Retry-After');
  return found;
}

const sameMembers = (value: unknown, members: readonly string[]): boolean =>
  typeof value === 'object' && value !== null && JSON.stringify(Object.keys(value).sort()) === JSON.stringify([...members].sort());

interface Run {
  statuses: Tally<number>;
  /** Requests generated, by category and by body kind (see CATEGORIES, BODY_KINDS). */
  categories: Tally<string>;
  bodyKinds: Tally<string>;
  failures: string[];
  /** Quarantine entries the generated requests must have left, by problem code. */
  quarantineExpected: Tally<string>;
  /** eventId → the `nested` JSON each valid event was sent with. */
  stored: Map<string, string>;
  nextId: number;
}

/** Sends one generated request and checks its answer against what the generator expects. */
async function sendHostile(pool: Pool, req: HostileRequest, run: Run): Promise<void> {
  const parts = req.label.split('/');
  run.categories.add(parts[0]!);
  if (parts.length > 1) run.bodyKinds.add(parts.at(-1)!);
  const ids: string[] = [];
  let body: string | Buffer | undefined = req.body;
  if (typeof body === 'string') {
    body = body.replaceAll(EVENT_ID_SLOT, () => {
      const id = `hv-${run.nextId++}`;
      ids.push(id);
      return id;
    });
  }
  if (req.compress !== undefined && body !== undefined) body = (req.compress === 'gzip' ? gzipSync : deflateSync)(body);
  const fail = (why: string) => {
    if (run.failures.length < 20) run.failures.push(`${req.label} ${req.method} ${req.path.slice(0, 80)} ${JSON.stringify(req.headers).slice(0, 300)} ${String(req.body ?? '').slice(0, 300)}: ${why}`);
  };
  let status: number;
  let bytes: Buffer;
  let headers: Record<string, string | string[] | undefined>;
  try {
    const reply = await pool.request({ method: req.method as 'GET', path: req.path, headers: req.headers, ...(body === undefined ? {} : { body }) });
    status = reply.statusCode;
    headers = reply.headers;
    bytes = Buffer.from(await reply.body.arrayBuffer());
  } catch (error) {
    run.statuses.add(0);
    fail(`no answer: ${(error as Error).message}`);
    return;
  }
  run.statuses.add(status);
  if (status >= 500) fail(`${status} ${bytes.toString().slice(0, 300)}`);
  if (status !== 200) {
    for (const problem of checkProblem(status, headers['content-type'] as string | undefined, headers['retry-after'] as string | undefined, bytes)) fail(problem);
  }
  // biome-ignore lint/suspicious/noExplicitAny: a checker of arbitrary replies, which it inspects member by member.
  const json = (): any => JSON.parse(bytes.toString());
  const { expect } = req;
  switch (expect.kind) {
    case 'refused': {
      const code = status === 200 ? undefined : (json().code as string);
      const asExpected = status === expect.status && code !== undefined && expect.codes.includes(code);
      if (!asExpected) fail(`expected ${expect.status} ${expect.codes.join('|')}, got ${status} ${bytes.toString().slice(0, 200)}`);
      if (expect.quarantined > 0) run.quarantineExpected.add(asExpected ? code : expect.codes.join('|'), expect.quarantined);
      return;
    }
    case 'batch': {
      // Each rejected item of a batch is quarantined on its own, as an invalid event.
      if (expect.rejected.length > 0) {
        const items = JSON.parse(String(req.body)) as unknown[];
        for (const index of expect.rejected) run.quarantineExpected.add(invalidEventCode(items[index]), 1);
      }
      if (status !== 200) return fail(`expected a batch reply, got ${status} ${bytes.toString().slice(0, 200)}`);
      const reply = json();
      if (!sameMembers(reply, ['accepted', 'duplicates', 'rejected', 'rejectedCount'])) return fail(`batch reply members ${Object.keys(reply).join(',')}`);
      const indices = (reply.rejected as { index: number; errors: unknown[] }[]).map((r) => r.index);
      const detailed = expect.rejected.slice(0, DETAILED_REJECTIONS);
      if (reply.accepted !== expect.accepted || reply.duplicates !== 0 || reply.rejectedCount !== expect.rejected.length || JSON.stringify(indices) !== JSON.stringify(detailed)) {
        return fail(`expected accepted ${expect.accepted} rejected [${expect.rejected.join(',')}], got ${bytes.toString().slice(0, 300)}`);
      }
      for (const r of reply.rejected as { errors: unknown[] }[]) {
        if (!sameMembers(r, ['index', 'errors']) || r.errors.length === 0 || !r.errors.every((e) => sameMembers(e, FIELD_ERROR_MEMBERS))) return fail(`rejected entry ${JSON.stringify(r).slice(0, 200)}`);
      }
      for (const [i, id] of ids.entries()) run.stored.set(id, req.nested[i]!);
      return;
    }
    case 'stored': {
      if (status !== 200) return fail(`expected 200, got ${status} ${bytes.toString().slice(0, 300)}`);
      const reply = json();
      if (!sameMembers(reply, ['duplicate', 'eventId']) || reply.eventId !== ids[0] || reply.duplicate !== false) return fail(`single reply ${bytes.toString()}`);
      run.stored.set(ids[0]!, req.nested[0]!);
      return;
    }
    case 'query': {
      if (status !== expect.status) return fail(`expected ${expect.status}, got ${status} ${bytes.toString().slice(0, 200)}`);
      if (status === 200 && !sameMembers(json(), ['events', 'nextCursor'])) fail('query reply members');
    }
  }
}

/** A raw request answered by 4xx problem+json replies only. */
async function sendRaw(port: number, bytes: Buffer): Promise<{ responses: RawResponse[]; problems: string[] }> {
  const { responses } = await exchange(port, { write: sendAll(bytes), waitMs: 5000, endAfterMs: 1000 });
  const problems: string[] = [];
  if (responses.length === 0) problems.push('no answer');
  for (const r of responses) {
    if (r.status < 400 || r.status > 499) problems.push(`status ${r.status}`);
    else problems.push(...checkProblem(r.status, r.headers['content-type'], r.headers['retry-after'], r.body));
  }
  return { responses, problems };
}

const bombs = new Map<string, Promise<Buffer>>();

/** `size` bytes of zeros compressed (once per process), without holding them in memory. */
function bomb(encoding: 'gzip' | 'deflate', size: number): Promise<Buffer> {
  const key = `${encoding}/${size}`;
  let made = bombs.get(key);
  if (made === undefined) {
    made = compressZeros(encoding, size);
    bombs.set(key, made);
  }
  return made;
}

async function compressZeros(encoding: 'gzip' | 'deflate', size: number): Promise<Buffer> {
  const zip = encoding === 'gzip' ? createGzip({ level: 9 }) : createDeflate({ level: 9 });
  const out: Buffer[] = [];
  zip.on('data', (chunk: Buffer) => out.push(chunk));
  const zeros = Buffer.alloc(MiB);
  for (let written = 0; written < size; written += zeros.length) {
    if (!zip.write(zeros)) await once(zip, 'drain');
  }
  zip.end();
  await once(zip, 'end');
  return Buffer.concat(out);
}

async function probe(server: ServerProcess): Promise<PrototypeSnapshot> {
  const lines = () => server.output().split(PROBE_LINE);
  const before = lines().length;
  server.child.kill('SIGUSR2');
  // A new probe line, complete: an older one would tell nothing about now.
  const answered = () => lines().length > before && lines().at(-1)!.includes('\n');
  for (let i = 0; i < 100 && !answered(); i++) await sleep(50);
  assert.ok(answered(), 'the pollution probe answered within 5 s');
  return JSON.parse(lines().at(-1)!.split('\n', 1)[0]!) as PrototypeSnapshot;
}

async function forEachConcurrently<T>(items: Iterable<T>, concurrency: number, run: (item: T) => Promise<void>): Promise<void> {
  const iterator = items[Symbol.iterator]();
  const worker = async () => {
    for (let next = iterator.next(); !next.done; next = iterator.next()) await run(next.value);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

export async function hostileScenario(t: TestContext, options: HostileOptions): Promise<void> {
  const { target } = options;
  const key = await createKey(TENANT, storeArgs(target));
  const bigKey = await createKey(BIG_TENANT, storeArgs(target));
  // Every hostile input is quarantined: no daily quota, so that each one can be checked. The event
  // listings have a budget no read reaches: on a loaded machine SQLite's reader threads (nice 19) wait
  // for the cores, and a 503 for that is the budget's behaviour (tested in sqlite-fairness), not the input's.
  const server = await startServer(serverOptions(target, ['--quarantine-max-per-day', '0', '--read-budget-ms', '600000'], probeEnv()));
  t.after(() => server.kill());
  const rss = sampleRss(server.child.pid!);
  t.after(() => rss.stop());
  const started = Date.now();
  const seed = Number(process.env.HOSTILE_SEED ?? Date.now() % 2 ** 31);
  const clean = await probe(server);
  assert.deepEqual(clean.inherited, [], 'nothing inherited before the run');

  // 1. Generated requests, through one keep-alive pool.
  const run: Run = { statuses: new Tally(), categories: new Tally(), bodyKinds: new Tally(), failures: [], quarantineExpected: new Tally(), stored: new Map(), nextId: 0 };
  const pool = new Pool(server.url, { connections: options.connections, pipelining: 1, headersTimeout: 60_000, bodyTimeout: 60_000 });
  const chunk = 1000;
  function* generated(): Generator<HostileRequest> {
    for (let done = 0; done < options.requests; done += chunk) {
      yield* fc.sample(hostileRequests(key), { numRuns: Math.min(chunk, options.requests - done), seed: seed + done });
    }
  }
  await forEachConcurrently(generated(), options.connections, (req) => sendHostile(pool, req, run));
  await pool.close();
  const poolSeconds = (Date.now() - started) / 1000;
  assert.deepEqual(run.failures, [], `seed ${seed}: answers that were not as they must be`);
  // Every kind of hostile request was tried (each is common enough to appear in a few thousand), and no other.
  assert.deepEqual([...run.categories.keys()].sort(), [...CATEGORIES].sort(), `seed ${seed}: every category generated: ${JSON.stringify(run.categories)}`);
  assert.deepEqual([...run.bodyKinds.keys()].sort(), [...BODY_KINDS].sort(), `seed ${seed}: every body kind generated: ${JSON.stringify(run.bodyKinds)}`);

  // 2. Raw HTTP.
  const rawStatuses = new Tally<number>();
  const rawLabels = new Tally<string>();
  const rawFailures: string[] = [];
  await forEachConcurrently(fc.sample(rawRequests(), { numRuns: options.raw, seed }), 32, async (req) => {
    rawLabels.add(req.label);
    const { responses, problems } = await sendRaw(server.port, req.bytes);
    for (const r of responses) rawStatuses.add(r.status);
    if (problems.length > 0 && rawFailures.length < 20) rawFailures.push(`${req.label} ${JSON.stringify(req.bytes.toString('latin1').slice(0, 120))}: ${problems.join('; ')}`);
  });
  assert.deepEqual(rawFailures, [], `seed ${seed}: raw requests not answered with a 4xx problem`);

  // 3. Huge bodies and bombs, all at once: memory must stay bounded.
  const gzipBomb = await bomb('gzip', options.bombBytes);
  const deflateBomb = await bomb('deflate', options.bombBytes);
  const head = (path: string, key: string | undefined, headers: string) => `POST ${path} HTTP/1.1\r\nHost: x\r\n${key ? `X-API-Key: ${key}\r\n` : ''}${headers}\r\n`;
  const n = options.bigBodyBytes;
  // Senders of huge bodies stop once answered and leave the connection open: the server drops the rest
  // and cuts them 5 s after its answer. A bomb arrives whole, so the connection stays usable: its client
  // hangs up once answered (endAfterMs).
  const stopAtAnswer = { chunked: false, untilAnswered: true };
  const big: { label: string; write: Parameters<typeof exchange>[1]['write']; endAfterMs?: number; status: number; code: string; quarantined: boolean }[] = [
    { label: `${n} bytes declared`, write: streamBody(head('/s3', bigKey, `Content-Type: application/json\r\nContent-Length: ${n}\r\n`), n, stopAtAnswer), status: 413, code: 'BM_ERR_BODY_TOO_LARGE', quarantined: true },
    { label: `${n} bytes chunked`, write: streamBody(head('/s3/batch', bigKey, 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n'), n, { chunked: true, untilAnswered: true }), status: 413, code: 'BM_ERR_BODY_TOO_LARGE', quarantined: true },
    { label: `${n} bytes of text/plain`, write: streamBody(head('/storage', bigKey, `Content-Type: text/plain\r\nContent-Length: ${n}\r\n`), n, stopAtAnswer), status: 413, code: 'BM_ERR_BODY_TOO_LARGE', quarantined: true },
    // Refused before reading: the server reads the body to its end without keeping it (as keep-alive
    // needs), then closes when the client does.
    { label: `${n} bytes without a key`, write: streamBody(head('/s3/batch', undefined, `Content-Type: application/json\r\nContent-Length: ${n}\r\n`), n, { chunked: false, untilAnswered: false }), endAfterMs: 0, status: 401, code: 'BM_ERR_AUTH_MISSING_KEY', quarantined: false },
    { label: `gzip bomb (${gzipBomb.length} bytes)`, write: sendAll(Buffer.concat([Buffer.from(head('/s3/batch', bigKey, `Content-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: ${gzipBomb.length}\r\n`)), gzipBomb])), endAfterMs: 60_000, status: 413, code: 'BM_ERR_BODY_TOO_LARGE', quarantined: true },
    { label: `deflate bomb (${deflateBomb.length} bytes)`, write: sendAll(Buffer.concat([Buffer.from(head('/s3', bigKey, `Content-Type: application/json\r\nContent-Encoding: deflate\r\nContent-Length: ${deflateBomb.length}\r\n`)), deflateBomb])), endAfterMs: 60_000, status: 413, code: 'BM_ERR_BODY_TOO_LARGE', quarantined: true },
  ];
  const bigRuns = big.flatMap((b) => Array.from({ length: options.bigTimes }, () => b));
  const bigResults = await Promise.all(bigRuns.map(async (b) => ({ b, result: await exchange(server.port, { write: b.write, waitMs: 60_000, ...(b.endAfterMs === undefined ? {} : { endAfterMs: b.endAfterMs }) }) })));
  for (const { b, result } of bigResults) {
    const reply = result.responses[0];
    assert.ok(reply, `${b.label}: answered`);
    assert.equal(reply.status, b.status, `${b.label}: ${reply.body.toString()}`);
    assert.deepEqual(checkProblem(reply.status, reply.headers['content-type'], reply.headers['retry-after'], reply.body), [], b.label);
    assert.equal(JSON.parse(reply.body.toString()).code, b.code, b.label);
  }
  const bigExport = await runCli(['quarantine', 'export', '--tenant', BIG_TENANT, ...storeArgs(target)]);
  assert.equal(bigExport.code, 0, bigExport.stderr);
  const bigEntries = bigExport.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as { code: string; truncated: boolean });
  assert.equal(bigEntries.length, big.filter((b) => b.quarantined).length * options.bigTimes, 'each huge body read is in quarantine');
  assert.ok(bigEntries.every((e) => e.code === 'BM_ERR_BODY_TOO_LARGE'));

  // 4. The server lives on, unpolluted, and stored exactly what it acknowledged.
  assert.equal(server.child.exitCode, null, 'the server is alive');
  assert.equal((await request(`${server.url}/healthz`)).status, 200);
  const after = await probe(server);
  assert.deepEqual(after, clean, 'no built-in prototype changed');
  const quarantined = await quarantineCodes(target, TENANT);
  assert.deepEqual(quarantined.toJSON(), run.quarantineExpected.toJSON(), 'every rejected input is in quarantine, once, under the code it was refused with');
  const storedIds = await storedEventIds(target, TENANT);
  assert.equal(storedIds.length, run.stored.size, 'exactly the valid events are stored');
  let checked = 0;
  let cursor: string | null = null;
  do {
    const page = await request(`${server.url}/v1/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key });
    assert.equal(page.status, 200);
    for (const event of page.json.events as Record<string, unknown>[]) {
      const nested = run.stored.get(event.eventId as string);
      assert.ok(nested !== undefined, `stored event ${String(event.eventId)} was sent`);
      const members = 'customerId' in event ? [...STORED_MEMBERS, 'customerId'] : STORED_MEMBERS;
      assert.ok(sameMembers(event, members), `members of ${String(event.eventId)}: ${Object.keys(event).join(',')}`);
      assert.deepEqual(event.nested, JSON.parse(nested), `nested value of ${String(event.eventId)} comes back as sent`);
      checked++;
    }
    cursor = page.json.nextCursor as string | null;
  } while (cursor);
  assert.equal(checked, run.stored.size);
  const peak = rss.stop();
  assert.ok(peak < options.maxRss, `peak RSS ${Math.round(peak / MiB)} MiB stays under ${Math.round(options.maxRss / MiB)} MiB`);
  assert.equal(await server.stop(), 0);

  const statuses = new Tally<number>();
  for (const tally of [run.statuses, rawStatuses]) for (const [s, k] of tally) statuses.add(s, k);
  for (const { result } of bigResults) statuses.add(result.responses[0]!.status);
  const total = (tally: Tally<unknown>) => [...tally.values()].reduce((a, b) => a + b, 0);
  report(t, `hostile/${target.backend}`, {
    seed,
    requests: total(run.statuses) + total(rawLabels) + bigResults.length,
    pooled: options.requests,
    pooledPerSecond: options.requests / poolSeconds,
    raw: options.raw,
    huge: bigRuns.length,
    bombBytes: options.bombBytes,
    statuses,
    fiveHundreds: [...statuses].filter(([s]) => s >= 500).reduce((sum, [, k]) => sum + k, 0),
    rawStatuses,
    categories: run.categories,
    bodyKinds: run.bodyKinds,
    rawKinds: rawLabels,
    quarantined: total(quarantined),
    quarantinedByCode: quarantined,
    validStoredAndChecked: checked,
    peakRssMiB: peak / MiB,
    seconds: (Date.now() - started) / 1000,
  });
}
