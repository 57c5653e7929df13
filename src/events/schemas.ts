/**
 * One JSON schema per event kind, derived from the catalogue and compiled once with Ajv. An input is
 * checked against the schema of its own kind, picked by `action` (a discriminator), never against
 * an anyOf union: Fastify's default Ajv strips fields from union branches, and a union's errors
 * would name every branch rather than the one the client meant.
 *
 * Each value type carries, next to its schema, how a failure is put into words, so that a FieldError
 * says what is wrong with the value itself rather than echoing an Ajv keyword.
 */
import { Ajv, _ } from 'ajv';
import type { ErrorObject, KeywordCxt, SchemaObject, ValidateFunction } from 'ajv';
import {
  ACTION_NAMES,
  COMMON_FIELDS,
  DELETED_VERSION_DIALECT,
  FIELD_ALIASES,
  FIELDS,
  KINDS,
  MAX_DELETED_OBJECTS,
  MAX_EVENT_BYTES,
  MAX_PART_NUMBER,
  MAX_STRING_BYTES,
  SERVER_EVENT_ID_PREFIX,
} from './catalogue.js';
import type { ActionName, CommonFieldName, CopySource, DeletedObject, FieldName, FieldType } from './catalogue.js';
import { describeReceived, pointerToken } from './field-error.js';
import type { FieldError } from './field-error.js';
import { parseTimestamp } from './timestamp.js';

/** How one value is checked, and explained when the check fails. */
interface ValueRule {
  /** Schema of a present value (absent, null and "" are decided by the slot). */
  readonly schema: SchemaObject;
  /** FieldError.expected for this value. */
  readonly expected: string;
  /** Why `value` (present, and failing `schema`) is wrong, as a sentence about `name`. */
  problem(name: string, value: unknown): string;
  /** Members of an object value. */
  readonly members?: ReadonlyMap<string, Slot>;
  /** Entries of an array value. */
  readonly items?: Slot;
}

/** A place for a value: its rule, whether it must be there, and the field it is an alias of. */
interface Slot {
  readonly rule: ValueRule;
  readonly required: boolean;
  readonly aliasOf?: FieldName;
}

interface WellFormedString {
  isWellFormed(): boolean; // ES2024 (Node 20 has it); the project's TypeScript lib is ES2022
}

/**
 * Whether PostgreSQL TEXT can store `text` within `maxBytes` of UTF-8: no U+0000 (TEXT cannot hold
 * it) and no unpaired surrogate (UTF-8 cannot encode one; it would be replaced silently).
 */
function isStorableString(text: string, maxBytes: number): boolean {
  // A UTF-16 code unit is at most 3 bytes of UTF-8, so short strings skip the byte count.
  if (text.length * 3 > maxBytes && Buffer.byteLength(text, 'utf8') > maxBytes) return false;
  return !text.includes('\0') && (text as unknown as WellFormedString).isWellFormed();
}

const ajv = new Ajv({
  // Keywords see the CheckContext of the input being checked (run() passes it as `this`).
  passContext: true,
  allErrors: true,
  removeAdditional: false,
  useDefaults: false,
  coerceTypes: false,
  strict: true,
  // Errors carry the failing value, for `received`; this costs nothing on valid input.
  verbose: true,
});

/**
 * A keyword whose check is a plain call inlined into the compiled validator. (A `compile` keyword
 * would be called with a context object and an instance path built for every value checked.)
 */
function inlineKeyword(keyword: string, schemaType: 'number' | 'boolean', check: (this: CheckContext, data: string, schema: never) => boolean): void {
  ajv.addKeyword({
    keyword,
    type: 'string',
    schemaType,
    code(cxt: KeywordCxt) {
      const fn = cxt.gen.scopeValue('func', { ref: check });
      cxt.fail(_`!${fn}.call(this, ${cxt.data}, ${cxt.schema})`);
    },
  });
}

inlineKeyword('storableString', 'number', isStorableString);
inlineKeyword('isoTimestamp', 'boolean', function (this: CheckContext, data: string) {
  return (data === this.timestampText ? this.timestamp : parseTimestamp(data)) !== undefined;
});

/** Absent, null and "" all mean "not given" for an optional value. */
const ABSENT: SchemaObject = { enum: [null, ''] };

const TEXT: ValueRule = {
  schema: { type: 'string', storableString: MAX_STRING_BYTES },
  expected: `string of 1 to ${MAX_STRING_BYTES} bytes of UTF-8`,
  problem(name, value) {
    if (typeof value !== 'string') return `${name} must be a string`;
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > MAX_STRING_BYTES) return `${name} must be at most ${MAX_STRING_BYTES} bytes of UTF-8; it has ${bytes}`;
    if (value.includes('\0')) return `${name} must not contain the character U+0000`;
    return `${name} must be well-formed Unicode; it holds an unpaired surrogate`;
  },
};

const TIMESTAMP_EXAMPLE = '2024-05-01T12:00:00Z';

/** Whether the time is too far ahead depends on the server clock: validate.ts checks that. */
const TIMESTAMP: ValueRule = {
  schema: { type: 'string', isoTimestamp: true },
  expected: `ISO 8601 date-time with Z or ±hh:mm, years 1970 to 9999, e.g. ${TIMESTAMP_EXAMPLE}`,
  problem: (name) => `${name} must be an ISO 8601 date-time with a time zone, e.g. ${TIMESTAMP_EXAMPLE}`,
};

const PROVIDER: ValueRule = {
  schema: { type: 'string', pattern: '^[A-Za-z0-9-]{1,32}$' },
  expected: '1 to 32 letters, digits or hyphens, e.g. aws',
  problem: (name, value) =>
    typeof value === 'string' ? `${name} must be 1 to 32 letters, digits or hyphens` : `${name} must be a string`,
};

const MAX_EVENT_ID_LENGTH = 128;

const EVENT_ID: ValueRule = {
  schema: {
    type: 'string',
    pattern: `^[\\x20-\\x7E]{1,${MAX_EVENT_ID_LENGTH}}$`,
    not: { pattern: `^${SERVER_EVENT_ID_PREFIX}` },
  },
  expected: `1 to ${MAX_EVENT_ID_LENGTH} printable ASCII characters, not starting with "${SERVER_EVENT_ID_PREFIX}"`,
  problem(name, value) {
    if (typeof value !== 'string') return `${name} must be a string`;
    if (value.startsWith(SERVER_EVENT_ID_PREFIX)) {
      return `${name} must not start with "${SERVER_EVENT_ID_PREFIX}", which is reserved for ids the server assigns`;
    }
    if (value.length > MAX_EVENT_ID_LENGTH) return `${name} must be at most ${MAX_EVENT_ID_LENGTH} characters; it has ${value.length}`;
    return `${name} must hold only printable ASCII characters (0x20 to 0x7E)`;
  },
};

const BYTES: ValueRule = {
  schema: { type: 'integer', minimum: 0, maximum: MAX_EVENT_BYTES },
  expected: `integer 0 to ${MAX_EVENT_BYTES} (16 TiB)`,
  problem: (name, value) =>
    typeof value === 'number' && Number.isInteger(value) && value > MAX_EVENT_BYTES
      ? `${name} must be at most ${MAX_EVENT_BYTES} (16 TiB, above any provider's largest object)`
      : `${name} must be a non-negative integer`,
};

const PART_NUMBER: ValueRule = {
  schema: { type: 'integer', minimum: 1, maximum: MAX_PART_NUMBER },
  expected: `integer 1 to ${MAX_PART_NUMBER}`,
  problem: (name) => `${name} must be an integer from 1 to ${MAX_PART_NUMBER}`,
};

const BOOLEAN: ValueRule = {
  schema: { type: 'boolean' },
  expected: 'true or false',
  problem: (name) => `${name} must be true or false (a JSON boolean, not a string)`,
};

/** The object shape as shown to clients, e.g. `{bucket, objectKey, versionId?}`. */
function shapeOf(members: ReadonlyMap<string, Slot>): string {
  return `{${[...members].map(([name, slot]) => (slot.required ? name : `${name}?`)).join(', ')}}`;
}

function stringMembers(required: Record<string, boolean>): ReadonlyMap<string, Slot> {
  return new Map(Object.entries(required).map(([name, isRequired]) => [name, { rule: TEXT, required: isRequired }]));
}

/** Open: members beyond the slots are kept as sent (validate.ts bounds them like unknown fields). */
function objectRule(members: ReadonlyMap<string, Slot>): ValueRule & { readonly members: ReadonlyMap<string, Slot> } {
  const shape = shapeOf(members);
  return {
    schema: objectSchema(members),
    expected: `object ${shape}`,
    problem: (name) => `${name} must be an object ${shape}`,
    members,
  };
}

const COPY_SOURCE = objectRule(
  stringMembers({ bucket: true, objectKey: true, versionId: false } satisfies Record<keyof CopySource, boolean>),
);

/** The SDK dialect's members naming a deleted version (mapped by validate.ts). */
const DELETED_VERSION_SLOTS: readonly (readonly [string, Slot])[] = [
  [DELETED_VERSION_DIALECT.versionId, { rule: TEXT, required: false }],
  [DELETED_VERSION_DIALECT.flag, { rule: BOOLEAN, required: false }],
];

const DELETED_OBJECT_MEMBERS = stringMembers({
  objectKey: true,
  resultingDeleteMarkerVersionId: false,
  hardDeletedVersionId: false,
} satisfies Record<keyof DeletedObject, boolean>);

const DELETED_OBJECT = objectRule(new Map([...DELETED_OBJECT_MEMBERS, ...DELETED_VERSION_SLOTS]));

const DELETED_OBJECTS: ValueRule = {
  schema: { type: 'array', minItems: 1, maxItems: MAX_DELETED_OBJECTS, items: DELETED_OBJECT.schema },
  expected: `array of 1 to ${MAX_DELETED_OBJECTS} ${DELETED_OBJECT.expected}`,
  problem: (name, value) =>
    Array.isArray(value)
      ? `${name} must hold 1 to ${MAX_DELETED_OBJECTS} entries; it has ${value.length}`
      : `${name} must be an array of 1 to ${MAX_DELETED_OBJECTS} entries`,
  // Not required: an entry that is null is explained as "must be an object", not as missing.
  items: { rule: DELETED_OBJECT, required: false },
};

/** The catalogue's members of an object value, in schema order (others are the client's own). */
export const OBJECT_MEMBERS = {
  copySource: [...COPY_SOURCE.members.keys()],
  deletedObjects: [...DELETED_OBJECT_MEMBERS.keys()],
} as const satisfies Partial<Record<FieldType, readonly string[]>>;

const RULES_BY_TYPE: Readonly<Record<FieldType, ValueRule>> = {
  string: TEXT,
  bytes: BYTES,
  partNumber: PART_NUMBER,
  boolean: BOOLEAN,
  copySource: COPY_SOURCE,
  deletedObjects: DELETED_OBJECTS,
};

/** `action` is checked before any schema runs (it picks the schema), so it has no rule here. */
const COMMON_RULES: Readonly<Record<Exclude<CommonFieldName, 'action'>, ValueRule>> = {
  timestamp: TIMESTAMP,
  provider: PROVIDER,
  customerId: TEXT,
  featureId: TEXT,
  clientType: TEXT,
  clientId: TEXT,
  eventId: EVENT_ID,
};

function optionalSchema(rule: ValueRule): SchemaObject {
  return { if: ABSENT, else: rule.schema };
}

function requiredSchema(rule: ValueRule): SchemaObject {
  return rule.schema.type === 'string' ? { ...rule.schema, minLength: 1 } : rule.schema;
}

/**
 * The schema of an object with these slots. A required field that has an alias in `slots` is
 * required only when its alias is not given; the alias itself is optional.
 */
function objectSchema(slots: ReadonlyMap<string, Slot>): SchemaObject {
  const aliasOf = new Map<string, string>();
  for (const [name, slot] of slots) if (slot.aliasOf !== undefined) aliasOf.set(slot.aliasOf, name);
  const properties: Record<string, SchemaObject> = {};
  const required: string[] = [];
  const conditions: SchemaObject[] = [];
  for (const [name, slot] of slots) {
    const alias = aliasOf.get(name);
    if (!slot.required) {
      properties[name] = optionalSchema(slot.rule);
    } else if (alias === undefined) {
      properties[name] = requiredSchema(slot.rule);
      required.push(name);
    } else {
      properties[name] = optionalSchema(slot.rule);
      const given = { not: ABSENT };
      conditions.push({
        if: { required: [alias], properties: { [alias]: given } },
        else: { required: [name], properties: { [name]: given } },
      });
    }
  }
  return {
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    ...(conditions.length > 0 ? { allOf: conditions } : {}),
  };
}

function commonSlots(): Map<string, Slot> {
  const slots = new Map<string, Slot>();
  for (const [name, rule] of Object.entries(COMMON_RULES)) {
    slots.set(name, { rule, required: COMMON_FIELDS[name as CommonFieldName].required });
  }
  return slots;
}

/** Every top-level field of a kind except `action`: common fields, kind fields, then aliases. */
function kindSlots(action: ActionName): Map<string, Slot> {
  const slots = commonSlots();
  const kind = KINDS[action];
  for (const name of kind.required) slots.set(name, { rule: RULES_BY_TYPE[FIELDS[name].type], required: true });
  for (const name of kind.optional) slots.set(name, { rule: RULES_BY_TYPE[FIELDS[name].type], required: false });
  if ((DELETED_VERSION_DIALECT.kinds as readonly ActionName[]).includes(action)) {
    for (const [name, slot] of DELETED_VERSION_SLOTS) slots.set(name, slot);
  }
  for (const [alias, target] of Object.entries(FIELD_ALIASES)) {
    const slot = slots.get(target);
    if (slot !== undefined) slots.set(alias, { rule: slot.rule, required: false, aliasOf: target });
  }
  return slots;
}

/** A kind's schema: its object schema with `action` pinned to the kind. Unknown fields are allowed. */
function kindSchema(action: ActionName, slots: ReadonlyMap<string, Slot>): SchemaObject {
  const schema = objectSchema(slots);
  return {
    ...schema,
    properties: { action: { const: action }, ...(schema.properties as Record<string, SchemaObject>) },
    required: ['action', ...((schema.required as string[] | undefined) ?? [])],
  };
}

interface Compiled {
  readonly schema: SchemaObject;
  readonly check: ValidateFunction;
  readonly slots: ReadonlyMap<string, Slot>;
}

interface Uncompiled {
  readonly schema: SchemaObject;
  readonly slots: ReadonlyMap<string, Slot>;
  compiled?: Compiled;
}

const KINDS_UNCOMPILED = Object.fromEntries(
  ACTION_NAMES.map((action) => {
    const slots = kindSlots(action);
    const entry: Uncompiled = { schema: kindSchema(action, slots), slots };
    return [action, entry];
  }),
) as Record<ActionName, Uncompiled>;

/** For an input whose action is unknown: its common fields can still be checked. */
const COMMON_UNCOMPILED: Uncompiled = (() => {
  const slots = commonSlots();
  return { schema: objectSchema(slots), slots };
})();

/**
 * Compiled on first use, not at import: compiling every kind costs a third of a second of CPU or
 * more, which every command that never checks an event (`keys`, `usage`, ...) would pay at start. A
 * validator compiles them all when it is made (compileSchemas), so `serve` pays it at start, not on
 * its first requests.
 */
function compiled(entry: Uncompiled): Compiled {
  entry.compiled ??= { schema: entry.schema, check: ajv.compile(entry.schema), slots: entry.slots };
  return entry.compiled;
}

/** Compiles every schema now (a validator is about to be used). */
export function compileSchemas(): void {
  for (const entry of [...Object.values(KINDS_UNCOMPILED), COMMON_UNCOMPILED]) compiled(entry);
}

/** The JSON schema of every kind, as compiled (for documentation and tests). */
export const KIND_SCHEMAS: Readonly<Record<ActionName, SchemaObject>> = Object.fromEntries(
  ACTION_NAMES.map((action) => [action, KINDS_UNCOMPILED[action].schema]),
) as Record<ActionName, SchemaObject>;

/** What the caller already knows of the input being checked: its timestamp, parsed once (validate.ts). */
export interface CheckContext {
  timestampText?: unknown;
  timestamp?: number | undefined;
}

/**
 * Checks `input` against the schema of its kind; on failure appends one FieldError per problem to
 * `errors` (several per path are possible; the caller keeps the first of each path).
 */
export function checkKindSchema(action: ActionName, input: object, errors: FieldError[], context: CheckContext = {}): boolean {
  return run(compiled(KINDS_UNCOMPILED[action]), input, errors, context);
}

/** Checks only the common fields (other than `action`), for an input whose action is unknown. */
export function checkCommonSchema(input: object, errors: FieldError[], context: CheckContext = {}): boolean {
  return run(compiled(COMMON_UNCOMPILED), input, errors, context);
}

function run(compiled: Compiled, input: object, errors: FieldError[], context: CheckContext): boolean {
  if (compiled.check.call(context, input)) return true;
  for (const error of compiled.check.errors ?? []) {
    const explained = explain(error, compiled.slots);
    if (explained !== undefined) errors.push(explained);
  }
  return false;
}

interface Located {
  readonly slot: Slot | undefined;
  /** The value's name as written in messages, e.g. `deletedObjects[3].objectKey`. */
  readonly name: string;
}

/** The slot of the value at an Ajv instancePath. */
function locate(pointer: string, slots: ReadonlyMap<string, Slot>): Located {
  const tokens = pointer.split('/').slice(1);
  let slot: Slot | undefined;
  let name = '';
  for (const token of tokens) {
    if (slot === undefined) {
      slot = slots.get(token);
      name = token;
    } else if (slot.rule.items !== undefined) {
      slot = slot.rule.items;
      name = `${name}[${token}]`;
    } else {
      slot = slot.rule.members?.get(token);
      name = `${name}.${token}`;
    }
  }
  return { slot, name };
}

function explain(error: ErrorObject, slots: ReadonlyMap<string, Slot>): FieldError | undefined {
  switch (error.keyword) {
    case 'if':
      // Reported alongside the errors of its branch, which say what is actually wrong.
      return undefined;
    case 'required': {
      const field = String(error.params.missingProperty);
      const { slot, name } = locate(`${error.instancePath}/${pointerToken(field)}`, slots);
      return {
        path: `${error.instancePath}/${pointerToken(field)}`,
        message: `${name} is required`,
        expected: slot?.rule.expected ?? 'a value',
        received: 'nothing',
      };
    }
    default: {
      const { slot, name } = locate(error.instancePath, slots);
      const value: unknown = error.data;
      return {
        path: error.instancePath,
        message: slot === undefined ? `${name} ${error.message ?? 'is invalid'}` : problemOf(slot, name, value),
        expected: slot?.rule.expected ?? JSON.stringify(error.params),
        received: describeReceived(value),
      };
    }
  }
}

function problemOf(slot: Slot, name: string, value: unknown): string {
  if (slot.required && value === null) return `${name} is required`;
  if (slot.required && value === '') return `${name} must not be empty`;
  return slot.rule.problem(name, value);
}
