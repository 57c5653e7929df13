/**
 * The catch-up's array parameters (store/postgres/arrays.ts), made without pg's serializer: what
 * PostgreSQL reads from them is exactly the values given, texts with quotes, backslashes, braces,
 * separators, the word NULL or nothing at all, integers past 2^53, and nulls. Needs TEST_DATABASE_URL.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { intArray, textArray } from '../../src/store/postgres/arrays.js';
import { toPgText } from '../../src/store/postgres/encode.js';
import { withPg } from '../support/scratch.js';

const URL = process.env.TEST_DATABASE_URL;
const SKIP = URL ? false : 'TEST_DATABASE_URL is not set: PostgreSQL array parameter tests SKIPPED';

describe('PostgreSQL array parameters', { skip: SKIP }, () => {
  it('reads back every text exactly, in order, nulls as NULL', async () => {
    const awkward = ['', 'NULL', 'null', '"', '\\', '\\"', '{', '}', ',', ' a b ', '{"x",\\}', 'é𝄞', '\u0001mark', "it's"];
    await withPg(URL!, async (c) => {
      const read = async (values: (string | null)[]) => (await c.query<{ a: (string | null)[] }>('SELECT $1::text[] AS a', [textArray(values)])).rows[0]!.a;
      assert.deepEqual(await read([...awkward, null]), [...awkward, null]);
      assert.deepEqual(await read([]), []);
      await fc.assert(
        fc.asyncProperty(fc.array(fc.option(fc.string({ unit: 'binary', maxLength: 12 }).map(toPgText), { nil: null }), { maxLength: 20 }), async (values) => {
          assert.deepEqual(await read(values), values);
        }),
        { numRuns: 200 },
      );
    });
  });

  it('reads back every integer exactly, past 2^53 and negative, nulls as NULL', async () => {
    await withPg(URL!, async (c) => {
      const read = async (values: (number | bigint | string | null)[]) =>
        (await c.query<{ a: (string | null)[] }>('SELECT $1::bigint[] AS a', [intArray(values)])).rows[0]!.a;
      assert.deepEqual(await read([0, -1, 9007199254740993n, -(2n ** 63n), 2n ** 63n - 1n, '42', null]), [
        '0',
        '-1',
        '9007199254740993',
        '-9223372036854775808',
        '9223372036854775807',
        '42',
        null,
      ]);
      assert.deepEqual(await read([]), []);
      const small = (await c.query<{ a: number[] }>('SELECT $1::smallint[] AS a', [intArray([0, 1, 2, -3])])).rows[0]!.a;
      assert.deepEqual(small, [0, 1, 2, -3]);
    });
  });
});
