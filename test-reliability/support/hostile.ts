/**
 * Malformed and hostile requests, generated with fast-check, each with the answer it must get. The
 * generator knows what it built (an event broken on purpose, a valid event with hostile content, a
 * wrong header); whether bytes are UTF-8 JSON at all it asks the server's own decoder.
 *
 * Valid events carry EVENT_ID_SLOT as their eventId; the sender replaces each slot with a fresh id,
 * so that every valid event is new and can be found in the store afterwards.
 */
import { gunzipSync, gzipSync, deflateSync, inflateSync } from 'node:zlib';
import fc from 'fast-check';
import { ACTION_NAMES, KINDS, FIELDS } from '../../src/events/catalogue.js';
import type { ActionName, FieldName } from '../../src/events/catalogue.js';
import { decodeJson } from '../../src/ingest/service.js';
import { minimalWireEvent } from '../../test/support/events.js';

export const SINGLE_PATHS = ['/storage', '/storage/singleCopy', '/s3', '/s3/single'];
export const BATCH_PATHS = ['/storage/batch', '/s3/batch'];

export const EVENT_ID_SLOT = '@@EVENT-ID@@';
/** The server's default --max-batch-events. */
const MAX_BATCH_EVENTS = 10_000;

export type Expectation =
  /** A 4xx problem+json with one of `codes`; `quarantined` entries are kept for it. */
  | { kind: 'refused'; status: number; codes: readonly string[]; quarantined: number }
  /** A batch answered 200: so many events accepted, the others rejected (and quarantined) at `rejected`. */
  | { kind: 'batch'; accepted: number; rejected: readonly number[] }
  /** One valid event answered 200 and stored. */
  | { kind: 'stored' }
  /** A /v1/events query answered with this status. */
  | { kind: 'query'; status: 200 | 400 };

export interface HostileRequest {
  label: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The body before EVENT_ID_SLOT replacement and compression. */
  body?: string | Buffer;
  compress?: 'gzip' | 'deflate';
  expect: Expectation;
  /** The `nested` value (as JSON) of each valid event, in EVENT_ID_SLOT order. */
  nested: string[];
}

// ---- JSON building blocks ----

type Json = string; // JSON text

const text = (value: unknown): Json => JSON.stringify(value);

/** Top-level and nested names that careless code would turn into prototype pollution. */
const HOSTILE_NAMES = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', '__defineGetter__', 'isAdmin', 'polluted'];
const FORBIDDEN_NAMES = ['__proto__', 'constructor', 'prototype', 'receivedAt'];

const funnyString = fc.oneof(
  fc.string({ maxLength: 12 }),
  // Valid event strings: no U+0000, no unpaired surrogate (which would not survive UTF-8).
  fc.string({ unit: 'binary', maxLength: 12 }).filter((s) => !s.includes('\0') && Buffer.from(s).toString() === s),
  fc.constantFrom('\u0001\u001f\u007f', '\u202e\u200f', '😀🙈', 'a\\"b', '</script>', "'; DROP TABLE events; --", '%00', '\ufeff'),
);

/** Nested JSON with hostile member names, shallow enough (depth <= 5) to be a valid extra field. */
const hostileNested: fc.Arbitrary<Json> = fc.letrec<{ node: Json }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    fc.oneof(funnyString, fc.integer(), fc.boolean(), fc.constant(null), fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d) || Number.isSafeInteger(d))).map(text),
    fc.array(tie('node'), { maxLength: 3 }).map((items) => `[${items.join(',')}]`),
    fc
      .array(fc.tuple(fc.oneof(fc.constantFrom(...HOSTILE_NAMES), funnyString), tie('node')), { maxLength: 4 })
      .map((members) => `{${members.map(([name, value]) => `${text(name)}:${value}`).join(',')}}`),
  ),
})).node;

/** An object's JSON with members appended as raw text (so that `__proto__` stays a plain member). */
function withMembers(base: Record<string, unknown>, members: readonly (readonly [string, Json])[]): Json {
  const head = text(base).slice(0, -1);
  const tail = members.map(([name, value]) => `${text(name)}:${value}`).join(',');
  if (tail === '') return text(base);
  return `${head}${head.length > 1 ? ',' : ''}${tail}}`;
}

/** A valid GetObject (the kind whose stored form the check knows) with a nested hostile extra field. */
const validEvent: fc.Arbitrary<{ json: Json; nested: Json }> = fc
  .record({ nested: hostileNested, customerId: fc.option(funnyString.filter((s) => s !== ''), { nil: undefined }) })
  // Within --max-extra-bytes (4,096 bytes of JSON) with room to spare.
  .filter(({ nested }) => Buffer.byteLength(JSON.stringify({ nested: JSON.parse(nested) as unknown })) < 3500)
  .map(({ nested, customerId }) => {
    const base = { ...minimalWireEvent('GetObject'), eventId: EVENT_ID_SLOT, ...(customerId === undefined ? {} : { customerId }) };
    return { json: withMembers(base, [['nested', nested]]), nested };
  });

const anyJson: fc.Arbitrary<Json> = fc.oneof(hostileNested, fc.jsonValue({ maxDepth: 2 }).map(text));

const wrongForString = fc.oneof(
  fc.constantFrom(text(5), text(true), '{}', '[]', text(['x']), text({ a: 'b' })),
  fc.constantFrom(text('x'.repeat(1025)), text('€'.repeat(342)), text('a\u0000b'), '"\\ud800"', '"x\\udc00y"', '"\\u0000"'),
);
const wrongByType: Record<(typeof FIELDS)[FieldName]['type'], fc.Arbitrary<Json>> = {
  string: wrongForString,
  bytes: fc.constantFrom('-1', '1.5', '-0.0001', '9007199254740992', '1e400', '-1e400', '"5"', 'true', '[]', '{}', '1e16'),
  partNumber: fc.constantFrom('0', '10001', '1.5', '-1', '"7"', '1e400', 'false', '65536'),
  boolean: fc.constantFrom('"true"', '1', '0', '"yes"', '[]', '{}'),
  copySource: fc.constantFrom('"x"', '5', '[]', text({ bucket: 5, objectKey: 'k' }), text({ bucket: 'b' }), text({ objectKey: 'k' }), text({ bucket: 'b', objectKey: 'k', versionId: 7 }), '{"bucket":"b","objectKey":"k","__proto__":{"polluted":true}}'),
  deletedObjects: fc.constantFrom('[]', '"x"', '{}', '[{}]', '[null]', '[5]', text([{ objectKey: 5 }]), text(Array.from({ length: 1001 }, (_, i) => ({ objectKey: `k${i}` })))),
};

const badActions = fc.oneof(
  fc.constantFrom('Unknown', 'getobject', 'GETOBJECT', '', ' GetObject', 'GetObject ', 'toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf', 'Get\u0000Object').map(text),
  fc.constantFrom('0', '-1', '1.5', 'true', 'null', '[]', '{}', text(['GetObject']), text({ $ne: null })),
  fc.string({ maxLength: 20 }).filter((s) => !(ACTION_NAMES as string[]).includes(s)).map(text),
);
const badTimestamps = fc.constantFrom(
  ...[
    '', 'now', '2024-05-01', '2024-05-01T12:00:00', '2024-05-01 12:00:00Z', '2024-13-01T12:00:00Z', '2024-02-30T12:00:00Z', '2023-02-29T12:00:00Z',
    '2024-05-01T24:00:00Z', '2024-05-01T12:60:00Z', '2024-05-01T12:00:60Z', '1969-12-31T23:59:59Z', '10000-01-01T00:00:00Z', '2999-01-01T00:00:00Z',
    '2024-05-01T12:00:00+24:00', '2024-05-01T12:00:00.Z', '2024-05-01T12:00:00ZZ', '２０２４-05-01T12:00:00Z', '1970-01-01T00:00:00+01:00',
  ].map(text),
  '1714564800', '1714564800000', 'true', '{}', '[]', 'null',
);
const badProviders = fc.constantFrom('""', 'null', '"a b"', text('x'.repeat(33)), '"prov_ider"', '"é"', '5', 'true', '["aws"]', '"aws\\n"');
const badEventIds = fc.constantFrom(text('x'.repeat(129)), '"bm-1"', '"é"', '"a\\nb"', '"\\u0000"', '5', 'true', '{}', '[]', '"\\ud800"');

interface Mutation {
  set?: readonly (readonly [string, Json])[];
  remove?: readonly string[];
  append?: readonly (readonly [string, Json])[];
}

/** Mutations that each make any event of `action` invalid. */
function mutations(action: ActionName): fc.Arbitrary<Mutation> {
  const kind = KINDS[action];
  const required = kind.required as readonly FieldName[];
  const optional = kind.optional as readonly FieldName[];
  const options: fc.Arbitrary<Mutation>[] = [
    badActions.map((value) => ({ set: [['action', value]] })),
    fc.constant({ remove: ['action'] }),
    badTimestamps.map((value) => ({ set: [['timestamp', value]] })),
    fc.constant({ remove: ['timestamp'] }),
    badProviders.map((value) => ({ set: [['provider', value]] })),
    fc.constant({ remove: ['provider'] }),
    fc.tuple(fc.constantFrom('customerId', 'featureId', 'clientType', 'clientId'), wrongForString).map(([name, value]) => ({ set: [[name, value]] })),
    badEventIds.map((value) => ({ set: [['eventId', value]] })),
    fc.tuple(fc.constantFrom(...FORBIDDEN_NAMES), anyJson).map(([name, value]) => ({ append: [[name, value]] })),
    // Duplicate names: JSON.parse keeps the last one, which is the bad one.
    badActions.map((value) => ({ append: [['action', value]] })),
    badTimestamps.map((value) => ({ append: [['timestamp', value]] })),
    badProviders.map((value) => ({ append: [['provider', value]] })),
    fc.integer({ min: 33, max: 3000 }).map((depth) => ({ set: [['deepExtra', '['.repeat(depth) + ']'.repeat(depth)]] })),
    fc.integer({ min: 33, max: 200 }).map((depth) => ({ set: [['deepObject', '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)]] })),
    fc.integer({ min: 4100, max: 50_000 }).map((size) => ({ set: [['blob', text('x'.repeat(size))]] })),
  ];
  if (required.length > 0) {
    const field = fc.constantFrom(...required);
    options.push(field.map((name) => ({ remove: [name, ...(name === 'bucket' ? ['bucketName'] : [])] })));
    // bucket and its alias bucketName go together, so that no other mutation can make one stand in for the other.
    options.push(fc.tuple(field, fc.constantFrom('null', '""')).map(([name, value]) => ({ set: [[name, value], ...(name === 'bucket' ? [['bucketName', value] as const] : [])] })));
    options.push(field.chain((name) => wrongByType[FIELDS[name].type].map((value) => ({ set: [[name, value] as const] }))));
  }
  if (optional.length > 0) {
    options.push(fc.constantFrom(...optional).chain((name) => wrongByType[FIELDS[name].type].map((value) => ({ set: [[name, value] as const] }))));
  }
  if ((required as readonly string[]).includes('bucket')) options.push(fc.constant({ set: [['bucket', '"one-bucket"'], ['bucketName', '"another-bucket"']] }));
  return fc.oneof(...options);
}

function applyMutations(action: ActionName, list: readonly Mutation[]): Json {
  const event: Record<string, unknown> = { ...minimalWireEvent(action) };
  const raw = new Map<string, Json>();
  for (const m of list) {
    for (const name of m.remove ?? []) {
      delete event[name];
      raw.delete(name);
    }
    for (const [name, value] of m.set ?? []) {
      delete event[name];
      raw.set(name, value);
    }
  }
  // Raw members go after the object's own, appended ones last (duplicates win by coming last).
  return withMembers(event, [...raw, ...list.flatMap((m) => m.append ?? [])]);
}

/** An event that fails validation whatever else is in it. */
const invalidEvent: fc.Arbitrary<Json> = fc
  .constantFrom(...ACTION_NAMES)
  .chain((action) => fc.array(mutations(action), { minLength: 1, maxLength: 3 }).map((list) => applyMutations(action, list)));

/** JSON that is not an object. */
const notObject: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom('0', '-0', '1e400', '1.5', 'null', 'true', 'false', '""', '"GetObject"', '[]', '[{}]', '[null]', '[[]]'),
  fc.jsonValue({ maxDepth: 2 }).map(text).filter((json) => !json.startsWith('{')),
  fc.integer({ min: 2, max: 100_000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth)),
);


// ---- Whole bodies ----

const INVALID_UTF8 = [[0xff], [0xc0, 0xaf], [0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0xfe, 0xfe]].map((b) => Buffer.from(b));

/** Bodies that are not UTF-8 JSON, by the server's own decoding. */
const invalidJson: fc.Arbitrary<Buffer> = fc
  .oneof(
    fc.constantFrom(
      '', ' ', 'NaN', 'Infinity', "{'action':'GetObject'}", '{"a":1,}', '[1,]', '{"a" 1}', '\u0000', '{"a":"\u0001"}', '"\\x41"', '"\\u12"', '{"a":1}{"b":2}', '[] []',
      '\ufeff\ufeff{}', '<event/>', '{"action":"GetObject"', '{"__proto__":', '[{"action":', 'nul', 'tru', '0x10', '01', '+1', '.5', '"\t"', '{"a":01}', '// {}', '{/* */}',
    ).map((s) => Buffer.from(s)),
    // A valid document cut short, or with a byte inserted.
    fc.tuple(fc.oneof(invalidEvent, validEvent.map((e) => e.json)), fc.nat(), fc.constantFrom('', '{', '}', '"', ',', ':', '\\', '\u0000', '\n', 'x')).map(([json, at, insert]) => {
      const cut = at % Math.max(1, json.length);
      return Buffer.from(insert === '' ? json.slice(0, cut) : json.slice(0, cut) + insert + json.slice(cut));
    }),
    // Invalid UTF-8 inside an otherwise valid event.
    fc.tuple(fc.oneof(invalidEvent, validEvent.map((e) => e.json)), fc.constantFrom(...INVALID_UTF8)).map(([json, bad]) => {
      const at = json.indexOf('"', 1) + 1;
      return Buffer.concat([Buffer.from(json.slice(0, at)), bad, Buffer.from(json.slice(at))]);
    }),
    fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
    fc.string({ unit: 'binary', maxLength: 64 }).map((s) => Buffer.from(s)),
  )
  .filter((bytes) => !decodeJson(bytes).ok);

interface Body {
  label: string;
  json: string | Buffer;
  /** What a single-event path and a batch path must answer. */
  single: Expectation;
  batch: Expectation;
  nested: string[];
}

const refused = (code: string, quarantined = 1, status = 400): Expectation => ({ kind: 'refused', status, codes: [code], quarantined });

/** The code an invalid event (a decoded JSON value) is refused and quarantined with: the Java collector's `Unknown` has its own. */
export function invalidEventCode(value: unknown): string {
  return typeof value === 'object' && value !== null && (value as { action?: unknown }).action === 'Unknown' ? 'BM_ERR_EVENT_UNMAPPED' : 'BM_ERR_EVENT_INVALID';
}

const bodies: fc.Arbitrary<Body> = fc.oneof(
  { weight: 3, arbitrary: invalidJson.map((json): Body => ({ label: 'invalid-json', json, single: refused('BM_ERR_BODY_INVALID_JSON'), batch: refused('BM_ERR_BODY_INVALID_JSON'), nested: [] })) },
  { weight: 5, arbitrary: invalidEvent.map((json): Body => ({ label: 'invalid-event', json, single: refused(invalidEventCode(JSON.parse(json.toString()))), batch: refused('BM_ERR_BODY_NOT_ARRAY'), nested: [] })) },
  { weight: 1, arbitrary: notObject.map((json): Body => ({ label: 'not-object', json, single: refused('BM_ERR_BODY_NOT_OBJECT'), batch: json.startsWith('[') ? batchOf(json) : refused('BM_ERR_BODY_NOT_ARRAY'), nested: [] })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('{}', text({ events: [] }), text({ 0: minimalWireEvent('GetObject'), length: 1 })).map((json): Body => ({ label: 'not-array', json, single: refused('BM_ERR_EVENT_INVALID'), batch: refused('BM_ERR_BODY_NOT_ARRAY'), nested: [] })),
  },
  { weight: 1, arbitrary: validEvent.map(({ json, nested }): Body => ({ label: 'valid-hostile', json, single: { kind: 'stored' }, batch: refused('BM_ERR_BODY_NOT_ARRAY'), nested: [nested] })) },
  {
    weight: 6,
    arbitrary: fc
      .array(fc.oneof({ weight: 4, arbitrary: invalidEvent.map((json) => ({ json, valid: false as const })) }, { weight: 2, arbitrary: validEvent.map((e) => ({ ...e, valid: true as const })) }, { weight: 1, arbitrary: notObject.map((json) => ({ json, valid: false as const })) }), { maxLength: 20 })
      .map((items): Body => {
        const json = `[${items.map((i) => i.json).join(',')}]`;
        const rejected = items.flatMap((item, index) => (item.valid ? [] : [index]));
        return {
          label: 'batch',
          json,
          single: refused('BM_ERR_BODY_NOT_OBJECT'),
          batch: { kind: 'batch', accepted: items.length - rejected.length, rejected },
          nested: items.flatMap((item) => (item.valid ? [item.nested] : [])),
        };
      }),
  },
  { weight: 1, arbitrary: fc.integer({ min: MAX_BATCH_EVENTS + 1, max: MAX_BATCH_EVENTS + 50 }).map((n): Body => ({ label: 'batch-too-many', json: `[${Array(n).fill('0').join(',')}]`, single: refused('BM_ERR_BODY_NOT_OBJECT'), batch: refused('BM_ERR_BATCH_TOO_MANY_EVENTS', 1, 413), nested: [] })) },
);

/** A JSON array of things that are all invalid events. */
function batchOf(json: string): Expectation {
  const parsed = JSON.parse(json) as unknown[];
  if (parsed.length > MAX_BATCH_EVENTS) return refused('BM_ERR_BATCH_TOO_MANY_EVENTS', 1, 413);
  return { kind: 'batch', accepted: 0, rejected: parsed.map((_, i) => i) };
}

// ---- Requests ----

const JSON_TYPES = ['application/json', 'application/json; charset=utf-8', 'Application/JSON', 'application/problem+json', 'application/vnd.api+json', 'application/json;;;', 'application/json; charset=latin1'];
const WRONG_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', 'json', 'text/json', '*/*', 'application/json-seq', 'application'];
const BAD_ENCODINGS = ['br', 'compress', 'zstd', 'gzip, gzip', 'identity, gzip', 'chunked', '*', 'gzip;q=1'];

const ingestPath = fc.oneof(fc.constantFrom(...SINGLE_PATHS).map((path) => ({ path, batch: false })), fc.constantFrom(...BATCH_PATHS).map((path) => ({ path, batch: true })));
// Mostly none: a query string refuses the request whatever its body, and the bodies are what this tests.
const withQuery = fc.oneof(
  { weight: 9, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.constantFrom('?__proto__[polluted]=1', '?constructor[prototype][polluted]=1', '?a=%zz', '?x=' + 'y'.repeat(2000), '?eventId=1&eventId=2') },
);

/** Ingestion routes take no query parameters: any is refused, naming it, and the body kept. */
const QUERY_REFUSED: Expectation = { kind: 'refused', status: 400, codes: ['BM_ERR_QUERY_INVALID'], quarantined: 1 };

function jsonRequest(key: string): fc.Arbitrary<HostileRequest> {
  return fc.record({ at: ingestPath, query: withQuery, body: bodies, type: fc.constantFrom(...JSON_TYPES) }).map(({ at, query, body, type }) => ({
    label: `${at.batch ? 'batch' : 'single'}/${body.label}`,
    method: 'POST',
    path: at.path + query,
    headers: { 'content-type': type, 'x-api-key': key },
    body: body.json,
    expect: query !== '' ? QUERY_REFUSED : at.batch ? body.batch : body.single,
    nested: query === '' ? body.nested : [],
  }));
}

function compressedRequest(key: string): fc.Arbitrary<HostileRequest> {
  return fc.record({ at: ingestPath, body: bodies, compress: fc.constantFrom('gzip' as const, 'deflate' as const), spelling: fc.constantFrom('', 'upper', 'x-') }).map(({ at, body, compress, spelling }) => ({
    label: `${compress}/${body.label}`,
    method: 'POST',
    path: at.path,
    headers: { 'content-type': 'application/json', 'content-encoding': spelling === 'upper' ? compress.toUpperCase() : spelling === 'x-' && compress === 'gzip' ? 'x-gzip' : compress, 'x-api-key': key },
    body: body.json,
    compress,
    expect: at.batch ? body.batch : body.single,
    nested: body.nested,
  }));
}

/** Bytes that the named decoder refuses. */
function undecodable(encoding: 'gzip' | 'deflate'): fc.Arbitrary<Buffer> {
  const decode = encoding === 'gzip' ? gunzipSync : inflateSync;
  return fc
    .oneof(
      fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
      // A real stream, cut short or with a flipped byte.
      fc.tuple(fc.nat(), fc.boolean()).map(([at, flip]) => {
        const whole = (encoding === 'gzip' ? gzipSync : deflateSync)(Buffer.from(text([minimalWireEvent('GetObject')])));
        const i = at % whole.length;
        if (!flip) return whole.subarray(0, i);
        const copy = Buffer.from(whole);
        copy[i] = copy[i]! ^ 0xff;
        return copy;
      }),
    )
    .filter((bytes) => {
      try {
        decode(bytes);
        return false;
      } catch {
        return true;
      }
    });
}

function transportRequest(key: string): fc.Arbitrary<HostileRequest> {
  const post = (label: string, headers: Record<string, string>, expect: Expectation) =>
    fc.tuple(ingestPath, bodies).map(([at, body]): HostileRequest => ({ label, method: 'POST', path: at.path, headers, body: body.json, expect, nested: [] }));
  return fc.oneof(
    fc.constantFrom(...WRONG_TYPES).chain((type) => post(`wrong-type`, { 'content-type': type, 'x-api-key': key }, refused('BM_ERR_UNSUPPORTED_MEDIA_TYPE', 1, 415))),
    // Without Content-Type an empty body is no body at all: then it is refused as invalid JSON.
    fc.tuple(ingestPath, bodies).map(([at, body]): HostileRequest => ({ label: 'no-type', method: 'POST', path: at.path, headers: { 'x-api-key': key }, body: body.json, expect: body.json.length === 0 ? refused('BM_ERR_BODY_INVALID_JSON') : refused('BM_ERR_UNSUPPORTED_MEDIA_TYPE', 1, 415), nested: [] })),
    fc.constantFrom(...BAD_ENCODINGS).chain((encoding) => post('bad-encoding', { 'content-type': 'application/json', 'content-encoding': encoding, 'x-api-key': key }, refused('BM_ERR_UNSUPPORTED_ENCODING', 1, 415))),
    fc.constantFrom('gzip' as const, 'deflate' as const).chain((encoding) =>
      fc.tuple(ingestPath, undecodable(encoding)).map(([at, bytes]): HostileRequest => ({ label: `undecodable-${encoding}`, method: 'POST', path: at.path, headers: { 'content-type': 'application/json', 'content-encoding': encoding, 'x-api-key': key }, body: bytes, expect: refused('BM_ERR_BODY_BAD_ENCODING'), nested: [] })),
    ),
  );
}

function authRequest(key: string): fc.Arbitrary<HostileRequest> {
  const wrongKeys = fc.oneof(
    fc.constantFrom('bmk_' + 'A'.repeat(43), key.toUpperCase(), key.slice(0, -1), key + 'x', 'x'.repeat(300), 'null', 'undefined', '[object Object]', "' OR 1=1 --", '__proto__'),
    fc.string({ minLength: 1, maxLength: 80 }).filter((s) => /^[\x21-\x7e]+$/.test(s) && s !== key),
  );
  return fc.tuple(ingestPath, bodies, fc.option(wrongKeys, { nil: undefined })).map(([at, body, wrong]): HostileRequest => ({
    label: wrong === undefined ? 'no-key' : 'wrong-key',
    method: 'POST',
    path: at.path,
    headers: { 'content-type': 'application/json', ...(wrong === undefined ? {} : { 'x-api-key': wrong }) },
    body: body.json,
    // Refused before the body is read: nothing to quarantine.
    expect: { kind: 'refused', status: 401, codes: wrong === undefined ? ['BM_ERR_AUTH_MISSING_KEY'] : ['BM_ERR_AUTH_INVALID_KEY'], quarantined: 0 },
    nested: [],
  }));
}

function routingRequest(key: string): fc.Arbitrary<HostileRequest> {
  const notFound = (method: string, path: string): HostileRequest => ({ label: 'not-found', method, path, headers: { 'x-api-key': key }, expect: { kind: 'refused', status: 404, codes: ['BM_ERR_NOT_FOUND'], quarantined: 0 }, nested: [] });
  const badUrl = (path: string): HostileRequest => ({ label: 'bad-url', method: 'GET', path, headers: { 'x-api-key': key }, expect: { kind: 'refused', status: 400, codes: ['BM_ERR_BAD_REQUEST'], quarantined: 0 }, nested: [] });
  return fc.oneof(
    fc.tuple(fc.constantFrom('PUT', 'PATCH', 'DELETE', 'OPTIONS'), fc.constantFrom(...SINGLE_PATHS, ...BATCH_PATHS, '/ping', '/v1/events')).map(([method, path]) => notFound(method, path)),
    fc.constantFrom(...SINGLE_PATHS, ...BATCH_PATHS).map((path) => notFound('GET', path)),
    fc.constantFrom('/S3', '/s3/', '/s3/batch/', '/storage/Batch', '/v1/events/', '/v2/events', '/admin', '/__proto__', '/constructor/prototype', '/.env', '/..%2f..%2fetc/passwd', '/s3;x', '/' + 'a'.repeat(4000)).map((path) => notFound('POST', path)),
    fc.string({ unit: fc.constantFrom(...'abcdefgh/._-~'.split('')), maxLength: 30 }).map((tail) => notFound('GET', `/x/${tail}`)),
    fc.constantFrom('/%', '/%zz', '/s3%', '/%c0%af', '/%ff', '/v1/%e2%82').map(badUrl),
  );
}

function queryRequest(key: string): fc.Arbitrary<HostileRequest> {
  const get = (query: string, status: 200 | 400): HostileRequest => ({ label: `query-${status}`, method: 'GET', path: `/v1/events${query}`, headers: { 'x-api-key': key }, expect: { kind: 'query', status }, nested: [] });
  return fc.oneof(
    // Names no route takes, prototype-polluting ones included, are refused rather than ignored.
    fc.constantFrom('?__proto__[polluted]=1', '?constructor[prototype][polluted]=1', '?__proto__=x', '?a=%zz', '?customerid=c1', '?customerId[]=c1').map((q) => get(q, 400)),
    fc.constantFrom('?limit=0', '?limit=-1', '?limit=1001', '?limit=1e3', '?limit=abc', '?limit=1&limit=2', '?limit=', '?action=toString', '?action=__proto__', '?action=Unknown', '?from=yesterday', '?to=2024-13-01T00:00:00Z', '?cursor=zzzzzzzzzzzzzzzzzzzz', '?cursor=%00', '?cursor=-1', '?customerId=' + 'c'.repeat(1025), '?customerId=a&customerId=b').map((q) => get(q, 400)),
    fc.constantFrom('', '?customerId=%00', '?customerId=' + encodeURIComponent('\ud83d\ude00'), '?limit=1000', '?from=1970-01-01T00:00:00Z&to=9999-12-31T23:59:59Z', '?action=GetObject&customerId=nobody').map((q) => get(q, 200)),
    fc.string({ maxLength: 40 }).map((s) => get(`?customerId=${encodeURIComponent(s)}`, s.length === 0 || s.length > 1024 ? (s.length === 0 ? 200 : 400) : 200)),
  );
}

function headerRequest(key: string): fc.Arbitrary<HostileRequest> {
  const many = (count: number, size: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`x-h-${i}`, 'v'.repeat(size)]));
  return fc.oneof(
    // Well under Node's 16 KiB of headers: the request is served as usual.
    fc.tuple(fc.integer({ min: 50, max: 200 }), jsonRequest(key)).map(([count, r]) => ({ ...r, label: `many-headers/${r.label}`, headers: { ...many(count, 20), ...r.headers } })),
    // Over it: refused before anything is read.
    fc.tuple(fc.integer({ min: 20, max: 40 }), fc.constantFrom(...SINGLE_PATHS, ...BATCH_PATHS)).map(([count, path]): HostileRequest => ({
      label: 'headers-too-large',
      method: 'POST',
      path,
      headers: { 'content-type': 'application/json', 'x-api-key': key, ...many(count, 1000) },
      body: '{}',
      expect: { kind: 'refused', status: 431, codes: ['BM_ERR_HEADERS_TOO_LARGE'], quarantined: 0 },
      nested: [],
    })),
    fc.tuple(fc.subarray(['__proto__', 'constructor', 'prototype', 'x-api-key-', 'content-type-', 'x-forwarded-for', 'x-tenant', 'host-'], { minLength: 1 }), jsonRequest(key)).map(([names, r]) => ({
      ...r,
      label: `odd-headers/${r.label}`,
      headers: { ...Object.fromEntries(names.map((n) => [n, n === 'x-tenant' ? 'default' : '{"polluted":true}'])), ...r.headers },
    })),
  );
}

/**
 * What hostileRequests labels its requests with: the category (a label's first part) and, for requests
 * that carry one of the generated bodies, the body's kind (its last part). The test checks that a run
 * covered each, and that nothing else was generated.
 */
export const CATEGORIES = ['single', 'batch', 'gzip', 'deflate', 'wrong-type', 'no-type', 'bad-encoding', 'undecodable-gzip', 'undecodable-deflate', 'no-key', 'wrong-key', 'not-found', 'bad-url', 'query-200', 'query-400', 'many-headers', 'headers-too-large', 'odd-headers'];
export const BODY_KINDS = ['invalid-json', 'invalid-event', 'not-object', 'not-array', 'valid-hostile', 'batch', 'batch-too-many'];

/** Every kind of hostile request, weighted towards bodies (what the server must read and judge). */
export function hostileRequests(key: string): fc.Arbitrary<HostileRequest> {
  return fc.oneof(
    { weight: 70, arbitrary: jsonRequest(key) },
    { weight: 6, arbitrary: compressedRequest(key) },
    { weight: 8, arbitrary: transportRequest(key) },
    { weight: 4, arbitrary: authRequest(key) },
    { weight: 4, arbitrary: routingRequest(key) },
    { weight: 4, arbitrary: queryRequest(key) },
    { weight: 4, arbitrary: headerRequest(key) },
  );
}

// ---- Raw bytes on a socket: what no HTTP client library would send ----

export interface RawRequest {
  label: string;
  bytes: Buffer;
}

/** Requests that break HTTP/1.1 itself. None carries a valid key, so any that parses is refused too. */
export function rawRequests(): fc.Arbitrary<RawRequest> {
  const raw = (label: string, value: string | Buffer): RawRequest => ({ label, bytes: typeof value === 'string' ? Buffer.from(value, 'latin1') : value });
  const head = 'POST /s3 HTTP/1.1\r\nHost: x\r\nX-API-Key: bmk_not-a-key\r\nContent-Type: application/json\r\n';
  const fixed = [
    raw('bad-method', 'BREW /s3 HTTP/1.1\r\nHost: x\r\n\r\n'),
    raw('lowercase-method', 'get /ping HTTP/1.1\r\nHost: x\r\n\r\n'),
    raw('header-space', 'GET /ping HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n'),
    raw('header-nul', 'GET /ping HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n'),
    raw('header-no-colon', 'GET /ping HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n'),
    raw('obs-fold', 'GET /ping HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n'),
    raw('content-length-text', `${head}Content-Length: abc\r\n\r\n{}`),
    raw('content-length-negative', `${head}Content-Length: -1\r\n\r\n{}`),
    raw('content-length-twice', `${head}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`),
    raw('content-length-and-chunked', `${head}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`),
    raw('bad-chunk-size', `${head}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`),
    raw('chunk-extension-flood', `${head}Transfer-Encoding: chunked\r\n\r\n2;${'x'.repeat(20_000)}\r\n{}\r\n0\r\n\r\n`),
    raw('transfer-encoding-gzip', `${head}Transfer-Encoding: gzip\r\n\r\n{}`),
    raw('body-shorter-than-length', `${head}Content-Length: 1000\r\n\r\n{}`),
    raw('no-host', 'GET /ping HTTP/1.1\r\nX-API-Key: bmk_not-a-key\r\n\r\n'),
    raw('two-hosts', 'GET /ping HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'),
    raw('expect-unknown', `${head}Expect: teapot\r\nContent-Length: 2\r\n\r\n{}`),
    raw('connect', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'),
    raw('upgrade', 'GET /ping HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'),
    raw('http-0.9', 'GET /\r\n\r\n'),
    raw('http-3.0', 'GET /ping HTTP/3.0\r\nHost: x\r\n\r\n'),
    raw('http2-preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
    raw('tls-client-hello', Buffer.from('16030100a5010000a10303' + '00'.repeat(80), 'hex')),
    raw('request-line-overflow', `GET /${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`),
    raw('header-overflow', `GET /ping HTTP/1.1\r\nHost: x\r\nX-A: ${'a'.repeat(20_000)}\r\n\r\n`),
    raw('bare-lf', 'GET /ping HTTP/1.1\nHost: x\n\n'),
    raw('bare-cr', 'GET /ping HTTP/1.1\rHost: x\r\r'),
    raw('absolute-uri', 'GET http://evil.example/ping HTTP/1.1\r\nHost: x\r\n\r\n'),
    raw('asterisk', 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n'),
    raw('pipelined-garbage', 'GET /ping HTTP/1.1\r\nHost: x\r\n\r\n\u0000\u0001garbage\r\n\r\n'),
    raw('smuggled', `${head}Content-Length: 44\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nX: GET /ping`),
  ];
  const tokenChars = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZ-_~!#$%&*+.^`|'.split(''));
  return fc.oneof(
    fc.constantFrom(...fixed),
    fc.string({ unit: tokenChars, minLength: 1, maxLength: 12 }).map((method) => raw('random-method', `${method} /s3 HTTP/1.1\r\nHost: x\r\n\r\n`)),
    fc.tuple(fc.string({ minLength: 1, maxLength: 10 }), fc.integer({ min: 0, max: 31 })).map(([name, code]) => raw('control-in-header', `GET /ping HTTP/1.1\r\nHost: x\r\n${name}${String.fromCharCode(code)}: v\r\n\r\n`)),
    // After a letter, so that the server has started reading a request and must answer it.
    fc.uint8Array({ minLength: 1, maxLength: 300 }).map((bytes) => raw('random-bytes', Buffer.concat([Buffer.from('G'), bytes]))),
    fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })).map(([at, byte]) => {
      const request = Buffer.from(`${head}Content-Length: 2\r\n\r\n{}`, 'latin1');
      request[at % request.length] = byte;
      return raw('flipped-byte', request);
    }),
  );
}
