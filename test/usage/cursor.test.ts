/**
 * The cursors of /v1/usage and /v1/costs are taken only when the query could have made them: a
 * hand-made one (a start before the first window, outside the range or not on a window start, a
 * value of the wrong type, a cost flag other than '1', the same key written otherwise) is a 400
 * naming /cursor, never a page; and no cursor string at all gives a 500. A real server on SQLite.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { createKey, request, startServer } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';
import { tempDir } from '../support/scratch.js';

const FROM = '2026-03-01T00:00:00Z';
const TO = '2026-03-04T00:00:00Z';
const from = Date.parse(FROM) / 1000;
const cursorOf = (key: unknown): string => Buffer.from(JSON.stringify(key)).toString('base64url');

describe('usage and cost cursors', () => {
  let server: ServerProcess;
  let key: string;

  before(async () => {
    const dataDir = tempDir();
    key = await createKey('cursors', ['--data-dir', dataDir]);
    server = await startServer({ dataDir });
    // Two customers on each of the three days: six rows by day and customer, more than one page of 2.
    const events = [0, 1, 2].flatMap((day) =>
      ['c1', 'c2'].map((customerId) => ({ action: 'GetObject', timestamp: new Date((from + day * 86400 + 3600) * 1000).toISOString(), provider: 'aws', bucket: 'media', objectKey: 'k', bytes: 10, customerId })),
    );
    const sent = await request(`${server.url}/s3/batch`, { key, body: events });
    assert.equal(sent.status, 200, sent.text);
  });

  after(async () => {
    await server.stop();
  });

  const ask = (path: string, query: string, cursor: string) => request(`${server.url}${path}?from=${FROM}&to=${TO}&${query}&cursor=${encodeURIComponent(cursor)}`, { key });

  async function refused(path: string, query: string, cursor: string, why: string): Promise<void> {
    const reply = await ask(path, query, cursor);
    assert.equal(reply.status, 400, `${why}: ${reply.text}`);
    assert.equal(reply.json.code, 'BM_ERR_QUERY_INVALID');
    assert.equal(reply.json.errors[0].path, '/cursor');
    assert.equal(typeof reply.json.errors[0].expected, 'string');
    assert.equal(typeof reply.json.errors[0].received, 'string');
  }

  it('/v1/usage: a real cursor gives the next page; hand-made ones the query could not have made are 400', async () => {
    const q = 'granularity=day&groupBy=customerId&limit=2';
    const first = await request(`${server.url}/v1/usage?from=${FROM}&to=${TO}&${q}`, { key });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(JSON.parse(Buffer.from(first.json.nextCursor, 'base64url').toString()), [from, 'c2']);
    const second = await ask('/v1/usage', q, first.json.nextCursor);
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(second.json.rows.map((r: { customerId: string }) => [r.customerId]), [['c1'], ['c2']]);
    await refused('/v1/usage', 'limit=2', cursorOf([-1]), 'before the first window (would answer the first page)');
    await refused('/v1/usage', q, cursorOf([from - 3600, 'c1']), 'an hour before from');
    await refused('/v1/usage', q, cursorOf([from + 3 * 86400, 'c1']), 'at to, past the last window');
    await refused('/v1/usage', q, cursorOf([from + 3600, 'c1']), 'a whole hour in the range, not a window start');
    await refused('/v1/usage', q, cursorOf([from + 0.5, 'c1']), 'not a whole hour');
    await refused('/v1/usage', q, cursorOf([from, 5]), 'a value not text');
    await refused('/v1/usage', q, cursorOf([from]), 'too few values');
    await refused('/v1/usage', q, cursorOf([String(from), 'c1']), 'a start not a number');
    await refused('/v1/usage', q, Buffer.from(`[${from}, "c1"]`).toString('base64url'), 'the same key written otherwise');
    await refused('/v1/usage', q, `${first.json.nextCursor}=`, 'padded');
  });

  it('/v1/costs: a real cursor gives the next page; a forged start or flag is 400', async () => {
    const q = 'granularity=day&groupBy=customerId&limit=2';
    const first = await request(`${server.url}/v1/costs?from=${FROM}&to=${TO}&${q}`, { key });
    assert.equal(first.status, 200, first.text);
    const made = JSON.parse(Buffer.from(first.json.nextCursor, 'base64url').toString()) as unknown[];
    assert.equal(made.length, 6, 'start, customerId, plan, currency and two flags');
    const second = await ask('/v1/costs', q, first.json.nextCursor);
    assert.equal(second.status, 200, second.text);
    assert.equal(second.json.rows.length, 2);
    await refused('/v1/costs', q, cursorOf([-1, ...made.slice(1)]), 'before the first window');
    await refused('/v1/costs', q, cursorOf([from - 86400, ...made.slice(1)]), 'a day before from');
    await refused('/v1/costs', q, cursorOf([from + 7200, ...made.slice(1)]), 'not a window start');
    await refused('/v1/costs', q, cursorOf([...made.slice(0, 4), 'yes', null]), 'a flag other than 1');
    await refused('/v1/costs', q, cursorOf([...made.slice(0, 5), 'x']), 'a flag other than 1');
  });

  it('no cursor string, nor any JSON array as one, gives a 500: 200 or 400', async () => {
    const cursors = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 7 }).map(cursorOf),
      fc.tuple(fc.integer({ min: -2, max: 80 }), fc.array(fc.option(fc.constantFrom('c1', 'c2', '1', 'x', '')), { minLength: 0, maxLength: 6 })).map(([h, v]) => cursorOf([from + h * 3600, ...v])),
    );
    const paths = fc.constantFrom('/v1/usage', '/v1/costs');
    const queries = fc.constantFrom('granularity=day&groupBy=customerId&limit=2', 'limit=1', 'granularity=hour&groupBy=customerId,bucket&limit=3');
    await fc.assert(
      fc.asyncProperty(paths, queries, cursors, async (path, query, cursor) => {
        const reply = await ask(path, query, cursor);
        assert.ok(reply.status === 200 || reply.status === 400, `${path} ${query} cursor ${JSON.stringify(cursor)}: ${reply.status} ${reply.text}`);
      }),
      { numRuns: 50 },
    );
  });
});
