/**
 * Wire events for tests, derived from the event catalogue (src/events/catalogue.ts).
 *
 * fullWireEvent and minimalWireEvent give fixed, realistic values that are distinct from field to
 * field, and already in normalized form (UTC timestamp without fraction, lowercase provider, no
 * aliases, no "" or null), so a test can assert what comes back against the exported constants.
 * Every call returns fresh objects: tests may mutate them.
 *
 * wireEventArbitrary generates random valid wire events of a kind, each with the normalized event
 * it must yield, for property tests.
 */
import fc from 'fast-check';
import { COMMON_FIELDS, FIELD_ALIASES, FIELD_DEFAULTS, FIELD_FALLBACKS, FIELDS, KINDS, MAX_EVENT_BYTES, MAX_STRING_BYTES, RESERVED_FIELDS } from '../../src/events/catalogue.js';
import type { ActionName, CopySource, DeletedObject, EventRecord, FieldName, FieldValue } from '../../src/events/catalogue.js';
import { SERVER_EVENT_ID_PREFIX } from '../../src/events/catalogue.js';

/** An event as a client sends it: a JSON object. */
export type WireEvent = Record<string, unknown>;

/** The timestamp of every fixture event, and its epoch seconds. */
export const WIRE_TIMESTAMP = '2024-05-01T12:00:00Z';
export const WIRE_TIMESTAMP_SECONDS = 1714564800;

/** A server clock one hour after WIRE_TIMESTAMP, for validators under test. */
export const WIRE_NOW_SECONDS = WIRE_TIMESTAMP_SECONDS + 3600;

export const WIRE_PROVIDER = 'wasabi';

/** The optional common fields of fullWireEvent. */
export const COMMON_VALUES = {
  customerId: 'cus-4821',
  featureId: 'gallery-export',
  clientType: 'ios-app',
  clientId: 'device-7f3a9c',
  eventId: 'evt-20240501-000042',
} as const satisfies Partial<Record<keyof typeof COMMON_FIELDS, string>>;

/** The value of every kind-specific field in the fixtures. */
export const FIELD_VALUES: { readonly [F in FieldName]: FieldValue<F> } = {
  bucket: 'media-uploads',
  objectKey: 'photos/2024/05/beach.jpg',
  versionId: '3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY',
  bytes: 5242880,
  // false, not the default true, so a test can tell a kept value from a defaulted one.
  isBillableEgress: false,
  objectCategory: 'image',
  fileType: 'image/jpeg',
  isSynthetic: true,
  copySource: { bucket: 'media-archive', objectKey: 'photos/2023/08/beach-original.jpg', versionId: 'QUpfdndhfd8438MNFDN93jdnJFkdmqnh893' },
  resultingDeleteMarkerVersionId: 'dm-8GkR2xQq7Yv1',
  hardDeletedVersionId: 'hd-Lm4pZ0c9Tt2w',
  deletedObjects: [
    { objectKey: 'tmp/upload-1.part', resultingDeleteMarkerVersionId: 'dm-1a2b3c', hardDeletedVersionId: 'hd-4d5e6f' },
    { objectKey: 'tmp/upload-2.part' },
  ],
  objectKeyPrefix: 'photos/2024/',
  uploadId: 'VXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA',
  partNumber: 7,
  force: true,
};

function fieldValues(names: readonly FieldName[]): WireEvent {
  // structuredClone: nested fixtures must not be shared between calls.
  return Object.fromEntries(names.map((name) => [name, structuredClone(FIELD_VALUES[name])]));
}

/** Every common and kind field set, plus `overrides` (which may add unknown fields). */
export function fullWireEvent(action: ActionName, overrides: WireEvent = {}): WireEvent {
  const kind = KINDS[action];
  return {
    action,
    timestamp: WIRE_TIMESTAMP,
    provider: WIRE_PROVIDER,
    ...COMMON_VALUES,
    ...fieldValues([...kind.required, ...kind.optional]),
    ...overrides,
  };
}

/** Only the required fields (action, timestamp, provider and the kind's), plus `overrides`. */
export function minimalWireEvent(action: ActionName, overrides: WireEvent = {}): WireEvent {
  return { action, timestamp: WIRE_TIMESTAMP, provider: WIRE_PROVIDER, ...fieldValues(KINDS[action].required), ...overrides };
}

// ---- Random valid events, for property tests ----

/** A random valid wire event and the normalized event it must yield. */
export interface GeneratedEvent {
  wire: WireEvent;
  expected: EventRecord;
}

/** Strings of exactly MAX_STRING_BYTES bytes of UTF-8, made of 1-, 2-, 3- and 4-byte characters. */
export const LIMIT_STRINGS: readonly string[] = [
  'a'.repeat(MAX_STRING_BYTES),
  'é'.repeat(MAX_STRING_BYTES / 2),
  '€'.repeat((MAX_STRING_BYTES - 1) / 3) + 'a',
  '😀'.repeat(MAX_STRING_BYTES / 4),
];

/** Not given: the key is left out, or sent as null or "" (what clients do for absent fields). */
const OMIT = Symbol('omit');

/** A value as sent, and as it must come out (OMIT for "not in the output"). */
interface Pair {
  wire: unknown;
  value: unknown;
}

const text: fc.Arbitrary<string> = fc.oneof(
  { weight: 12, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 24 }).filter((s) => !s.includes('\0')) },
  { weight: 1, arbitrary: fc.constantFrom(...LIMIT_STRINGS) },
);

const given = (arbitrary: fc.Arbitrary<unknown>): fc.Arbitrary<Pair> => arbitrary.map((v) => ({ wire: v, value: v }));

/** The pair, or not given (then `fallback` is what must come out). */
const maybe = (pair: fc.Arbitrary<Pair>, fallback: unknown = OMIT): fc.Arbitrary<Pair> =>
  fc.oneof(pair, fc.constantFrom(OMIT, null, '').map((wire) => ({ wire, value: fallback })));

function objectOf(members: Record<string, boolean>): fc.Arbitrary<Pair> {
  const slots = Object.fromEntries(Object.entries(members).map(([name, required]) => [name, required ? given(text) : maybe(given(text))]));
  return fc.record(slots).map((pairs) => {
    const wire: Record<string, unknown> = {};
    const value: Record<string, unknown> = {};
    for (const [name, pair] of Object.entries(pairs)) {
      if (pair.wire !== OMIT) wire[name] = pair.wire;
      if (pair.value !== OMIT) value[name] = pair.value;
    }
    return { wire, value };
  });
}

const copySourcePair = objectOf({ bucket: true, objectKey: true, versionId: false } satisfies Record<keyof CopySource, boolean>);
const deletedObjectPair = objectOf({
  objectKey: true,
  resultingDeleteMarkerVersionId: false,
  hardDeletedVersionId: false,
} satisfies Record<keyof DeletedObject, boolean>);

const VALUE_PAIRS = {
  string: given(text),
  bytes: given(fc.integer({ min: 0, max: MAX_EVENT_BYTES })),
  partNumber: given(fc.integer({ min: 1, max: 10000 })),
  boolean: given(fc.boolean()),
  copySource: copySourcePair,
  deletedObjects: fc
    .array(deletedObjectPair, { minLength: 1, maxLength: 4 })
    .map((pairs) => ({ wire: pairs.map((p) => p.wire), value: pairs.map((p) => p.value) })),
} satisfies Record<(typeof FIELDS)[FieldName]['type'], fc.Arbitrary<Pair>>;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * An epoch second written in one of the accepted forms: any offset (the local time shown is shifted
 * accordingly), with or without a fraction, `T`/`Z` in either case.
 */
const timestampPair: fc.Arbitrary<Pair> = fc
  .record({
    // From day 2, so that no negative offset writes a year before 1970.
    seconds: fc.integer({ min: 86400, max: WIRE_NOW_SECONDS }),
    offsetMinutes: fc.oneof(fc.constant(0), fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 })),
    offsetForm: fc.constantFrom('colon', 'compact', 'hours', 'z'),
    fraction: fc.oneof(fc.constant(''), fc.stringMatching(/^\.[0-9]{1,9}$/)),
    lower: fc.boolean(),
  })
  .map(({ seconds, offsetMinutes, offsetForm, fraction, lower }) => {
    const offset = offsetForm === 'z' ? 0 : offsetForm === 'hours' ? offsetMinutes - (offsetMinutes % 60) : offsetMinutes;
    const local = new Date((seconds + offset * 60) * 1000).toISOString().slice(0, 19);
    const abs = Math.abs(offset);
    const sign = offset < 0 ? '-' : '+';
    const zone =
      offsetForm === 'z'
        ? 'Z'
        : offsetForm === 'colon'
          ? `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`
          : offsetForm === 'compact'
            ? `${sign}${pad(Math.floor(abs / 60))}${pad(abs % 60)}`
            : `${sign}${pad(Math.floor(abs / 60))}`;
    const wire = `${local}${fraction}${zone}`;
    return { wire: lower ? wire.toLowerCase() : wire, value: seconds };
  });

const providerPair: fc.Arbitrary<Pair> = fc
  .stringMatching(/^[A-Za-z0-9-]{1,32}$/)
  .map((wire) => ({ wire, value: wire.toLowerCase() }));

const eventIdText = fc
  .string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 128 })
  .filter((id) => !id.startsWith(SERVER_EVENT_ID_PREFIX));

/** Names that are not unknown fields: every name the catalogue gives a meaning, and the refused ones. */
const NAMED = new Set<string>([
  ...Object.keys(COMMON_FIELDS),
  ...Object.keys(FIELDS),
  ...Object.keys(FIELD_ALIASES),
  ...RESERVED_FIELDS,
  '__proto__',
  'constructor',
  'prototype',
]);

/** No integer a double cannot hold exactly (beyond ±2^53): the server refuses those (exact-number.ts). */
const exactNumbers = (value: unknown): boolean =>
  typeof value === 'number' ? !Number.isInteger(value) || Number.isSafeInteger(value)
  : Array.isArray(value) ? value.every(exactNumbers)
  : typeof value === 'object' && value !== null ? Object.values(value).every(exactNumbers)
  : true;

/** Unknown top-level fields, which must come back unchanged in `extra`. */
const extraFields = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 12 }).filter((name) => !NAMED.has(name)),
  fc.jsonValue({ maxDepth: 3 }).filter(exactNumbers),
  { maxKeys: 4, noNullPrototype: true },
);

const ALIAS_OF = new Map<string, string>(Object.entries(FIELD_ALIASES).map(([alias, target]) => [target, alias]));

/**
 * Random valid events of one kind: random strings (any Unicode, up to the byte limit), a random
 * subset of the optional fields (left out, null or ""), aliases, timestamp forms, unknown fields.
 */
export function wireEventArbitrary(action: ActionName): fc.Arbitrary<GeneratedEvent> {
  const kind = KINDS[action];
  const fields: Record<string, fc.Arbitrary<Pair>> = {
    timestamp: timestampPair,
    provider: providerPair,
    customerId: maybe(given(text)),
    featureId: maybe(given(text)),
    clientType: maybe(given(text)),
    clientId: maybe(given(text)),
    eventId: maybe(given(eventIdText)),
  };
  for (const name of kind.required) fields[name] = VALUE_PAIRS[FIELDS[name].type];
  for (const name of kind.optional) {
    fields[name] = maybe(VALUE_PAIRS[FIELDS[name].type], (FIELD_DEFAULTS as Partial<Record<FieldName, unknown>>)[name] ?? OMIT);
  }
  const own = new Set<string>([...kind.required, ...kind.optional]);
  // Catalogue names of other kinds, sent empty: they mean nothing and must not show up anywhere.
  const foreign = [...Object.keys(FIELDS), ...Object.keys(FIELD_ALIASES)].filter(
    (name) => !own.has(name) && !own.has((FIELD_ALIASES as Record<string, string>)[name] ?? ''),
  );
  return fc
    .record({
      pairs: fc.record(fields),
      spelling: fc.constantFrom('name', 'alias', 'both'),
      empties: fc.subarray(foreign).chain((names) => fc.tuple(...names.map((name) => fc.constantFrom<[string, null | '']>([name, null], [name, ''])))),
      extra: extraFields,
    })
    .map(({ pairs, spelling, empties, extra }) => {
      const wire: WireEvent = { action };
      const expected: Record<string, unknown> = { action };
      for (const [name, pair] of Object.entries(pairs)) {
        const alias = ALIAS_OF.get(name);
        if (pair.wire !== OMIT) {
          if (alias === undefined || spelling !== 'alias') wire[name] = pair.wire;
          if (alias !== undefined && spelling !== 'name') wire[alias] = pair.wire;
        }
        if (pair.value !== OMIT) expected[name] = pair.value;
      }
      for (const [field, source] of Object.entries(FIELD_FALLBACKS)) {
        if (expected[field] === undefined && expected[source] !== undefined && own.has(field)) expected[field] = expected[source];
      }
      for (const [name, empty] of empties) wire[name] = empty;
      Object.assign(wire, extra);
      if (Object.keys(extra).length > 0) expected.extra = { ...extra };
      return { wire, expected: expected as unknown as EventRecord };
    });
}
