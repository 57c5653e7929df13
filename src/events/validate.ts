/**
 * Validation and normalization of one event, on the ingestion hot path. The kind's compiled schema
 * (schemas.ts) decides what is valid; this module adds what a schema cannot say (the clock, alias
 * agreement, unknown fields) and builds the normalized EventRecord. It never writes to its input,
 * which is kept as received in quarantine when it fails.
 */
import {
  ACTION_NAMES,
  COMMON_FIELDS,
  DELETED_VERSION_DIALECT,
  FIELD_ALIASES,
  FIELD_DEFAULTS,
  FIELD_FALLBACKS,
  FIELDS,
  KINDS,
  RESERVED_FIELDS,
  UNMAPPED_ACTION,
  isActionName,
} from './catalogue.js';
import type { ActionName, CommonFieldName, EventRecord, FieldName, NormalizedEvent } from './catalogue.js';
import { inexactNumberError } from './exact-number.js';
import { describeReceived, pointerToken, quoteExcerpt } from './field-error.js';
import type { FieldError } from './field-error.js';
import { OBJECT_MEMBERS, checkCommonSchema, checkKindSchema, compileSchemas } from './schemas.js';
import { formatTimestamp, parseTimestamp } from './timestamp.js';

export interface EventValidatorOptions {
  /** How far ahead of the server clock an event timestamp may be, in seconds. */
  maxFutureSeconds: number;
  /** Bound on JSON.stringify(event.extra), in bytes of UTF-8. */
  maxExtraBytes: number;
}

/** `unmapped`: the event is one the Java collector could not map (`action: "Unknown"`). */
export type ValidationResult = { ok: true; event: NormalizedEvent } | { ok: false; errors: FieldError[]; unmapped: boolean };

export interface EventValidator {
  /**
   * Checks and normalizes one decoded JSON value. `nowSeconds` is the server clock (epoch seconds)
   * that bounds future timestamps. Errors are sorted by path, one per path, at most MAX_FIELD_ERRORS.
   */
  validate(input: unknown, nowSeconds: number): ValidationResult;
}

export const MAX_FIELD_ERRORS = 50;

/** Unknown fields are kept as sent, but only as deep as JSON.stringify can always serialize them. */
export const MAX_EXTRA_DEPTH = 32;

const KNOWN = 0;
const FOREIGN = 1;
const FORBIDDEN = 2;
/** A member of the SDK dialect's deleted version: mapped, or kept as unknown when it cannot be. */
const DIALECT = 3;
/** What a top-level name means for one kind; names not in the map are unknown (kept in `extra`). */
type Role = typeof KNOWN | typeof FOREIGN | typeof FORBIDDEN | typeof DIALECT;

/** Names that could reach a prototype in careless code downstream. */
const PROTOTYPE_NAMES: readonly string[] = ['__proto__', 'constructor', 'prototype'];
/** Top-level names refused: those, and the names the server sets. */
const FORBIDDEN_NAMES: readonly string[] = [...PROTOTYPE_NAMES, ...RESERVED_FIELDS];

const OPTIONAL_COMMON = (Object.keys(COMMON_FIELDS) as CommonFieldName[]).filter((name) => !COMMON_FIELDS[name].required);

interface FieldPlan {
  readonly name: FieldName;
  /** The other name the value is taken from when the field is not given: its alias, or its fallback field. */
  readonly source: string | undefined;
  /** Members of an object value that are the catalogue's (others are the client's own, kept as sent). */
  readonly members: ReadonlySet<string> | undefined;
  readonly isList: boolean;
  readonly fallback: unknown;
}

interface KindPlan {
  readonly fields: readonly FieldPlan[];
  readonly aliases: readonly (readonly [alias: string, target: FieldName])[];
  readonly roles: ReadonlyMap<string, Role>;
  /** Whether the SDK dialect's versionId/isDeleteMarker are mapped at top level. */
  readonly deletedVersion: boolean;
}

const COPY_SOURCE_MEMBERS: ReadonlySet<string> = new Set(OBJECT_MEMBERS.copySource);
const DELETED_OBJECT_MEMBERS: ReadonlySet<string> = new Set(OBJECT_MEMBERS.deletedObjects);

function planKind(action: ActionName): KindPlan {
  const kind = KINDS[action];
  const own: readonly FieldName[] = [...kind.required, ...kind.optional];
  const aliases = Object.entries(FIELD_ALIASES).filter(([, target]) => own.includes(target));
  const fallbacks = FIELD_FALLBACKS as Partial<Record<FieldName, FieldName>>;
  const fields = own.map((name): FieldPlan => {
    const type = FIELDS[name].type;
    const fallbackField = fallbacks[name];
    return {
      name,
      source: aliases.find(([, target]) => target === name)?.[0] ?? (fallbackField !== undefined && own.includes(fallbackField) ? fallbackField : undefined),
      members: type === 'copySource' ? COPY_SOURCE_MEMBERS : type === 'deletedObjects' ? DELETED_OBJECT_MEMBERS : undefined,
      isList: type === 'deletedObjects',
      fallback: (FIELD_DEFAULTS as Partial<Record<FieldName, unknown>>)[name],
    };
  });
  const deletedVersion = (DELETED_VERSION_DIALECT.kinds as readonly ActionName[]).includes(action);
  const roles = new Map<string, Role>();
  for (const name of [...Object.keys(FIELDS), ...Object.keys(FIELD_ALIASES)]) roles.set(name, FOREIGN);
  if (deletedVersion) for (const name of [DELETED_VERSION_DIALECT.versionId, DELETED_VERSION_DIALECT.flag]) roles.set(name, DIALECT);
  for (const name of [...Object.keys(COMMON_FIELDS), ...own, ...aliases.map(([alias]) => alias)]) roles.set(name, KNOWN);
  for (const name of FORBIDDEN_NAMES) roles.set(name, FORBIDDEN);
  return { fields, aliases, roles, deletedVersion };
}

/** Where the SDK dialect's {versionId, isDeleteMarker} of `source` map to, or undefined to keep them as sent. */
function mapDeletedVersion(source: Record<string, unknown>): { field: FieldName; value: unknown } | undefined {
  const value = source[DELETED_VERSION_DIALECT.versionId];
  if (!isGiven(value)) return undefined;
  const field = source[DELETED_VERSION_DIALECT.flag] === true ? DELETED_VERSION_DIALECT.whenFlagged : DELETED_VERSION_DIALECT.otherwise;
  const given = source[field];
  return !isGiven(given) || given === value ? { field, value } : undefined;
}

/** The client's own fields and members, as sent: their names (for messages) and size as JSON. */
interface Unknowns {
  names: string[];
  bytes: number;
}

const PLANS = Object.fromEntries(ACTION_NAMES.map((action) => [action, planKind(action)])) as Record<ActionName, KindPlan>;

export function createEventValidator(options: EventValidatorOptions): EventValidator {
  const { maxFutureSeconds, maxExtraBytes } = options;
  compileSchemas();
  // The last timestamp parsed: a client's batch repeats it (the SDK stamps events to the millisecond).
  let lastText: string | undefined;
  let lastSeconds: number | undefined;
  const secondsOf = (text: string): number | undefined => {
    if (text !== lastText) {
      lastSeconds = parseTimestamp(text);
      lastText = text;
    }
    return lastSeconds;
  };
  return {
    validate(input, nowSeconds) {
      if (!isPlainObject(input)) {
        return invalid([
          { path: '', message: 'an event must be a JSON object', expected: 'JSON object', received: describeReceived(input) },
        ]);
      }
      const errors: FieldError[] = [];
      const action = input.action;
      const timestamp = typeof input.timestamp === 'string' ? secondsOf(input.timestamp) : undefined;
      if (timestamp !== undefined && timestamp > nowSeconds + maxFutureSeconds) {
        errors.push(futureError(input.timestamp, timestamp, nowSeconds, maxFutureSeconds));
      }
      if (!isActionName(action)) {
        // Without a kind only the common fields can be checked; the client still learns of those.
        errors.push(actionError(action));
        checkCommonSchema(input, errors, { timestampText: input.timestamp, timestamp });
        return invalid(errors, action === UNMAPPED_ACTION);
      }
      const plan = PLANS[action];
      checkKindSchema(action, input, errors, { timestampText: input.timestamp, timestamp });
      for (const [alias, target] of plan.aliases) {
        const aliasValue = input[alias];
        const targetValue = input[target];
        if (isGiven(aliasValue) && isGiven(targetValue) && aliasValue !== targetValue) {
          errors.push({
            path: `/${alias}`,
            message: `${alias} (an alias of ${target}) differs from ${target}; send only one of them`,
            expected: `the same value as ${target}: ${describeReceived(targetValue)}`,
            received: describeReceived(aliasValue),
          });
        }
      }
      const unknowns: Unknowns = { names: [], bytes: 0 };
      const deletedVersion = plan.deletedVersion ? mapDeletedVersion(input) : undefined;
      const extra = collectExtra(input, plan.roles, plan.deletedVersion && deletedVersion === undefined, unknowns, errors);
      // Object values are copied now: their unknown members count against the same bound.
      let copies: Map<FieldName, unknown> | undefined;
      for (const field of plan.fields) {
        if (field.members === undefined) continue;
        const value = input[field.name];
        if (!isGiven(value)) continue;
        const copy = field.isList
          ? Array.isArray(value)
            ? value.map((entry, i) => copyObject(entry, field.members!, true, `${field.name}/${i}`, unknowns, errors))
            : value
          : copyObject(value, field.members, false, field.name, unknowns, errors);
        copies ??= new Map();
        copies.set(field.name, copy);
      }
      if (unknowns.bytes > maxExtraBytes) errors.push(extraTooLarge(unknowns, maxExtraBytes));
      if (errors.length > 0) return invalid(errors);

      // The schema passed, so the fields below have their types and the timestamp parsed.
      const event: EventRecord = { action, timestamp: timestamp as number, provider: (input.provider as string).toLowerCase() };
      const fields = event as unknown as Record<string, unknown>;
      for (const name of OPTIONAL_COMMON) {
        const value = input[name];
        if (isGiven(value)) fields[name] = value;
      }
      for (const field of plan.fields) {
        let value = copies?.get(field.name) ?? input[field.name];
        if (!isGiven(value) && field.source !== undefined) value = input[field.source];
        if (isGiven(value)) fields[field.name] = value;
        else if (field.fallback !== undefined) fields[field.name] = field.fallback;
      }
      if (deletedVersion !== undefined) fields[deletedVersion.field] = deletedVersion.value;
      if (extra !== undefined) event.extra = extra;
      // The kind's schema passed: its required fields are present, with their types.
      return { ok: true, event: event as NormalizedEvent };
    },
  };
}

/** null and "" stand for "not given" wherever the catalogue names a field. */
function isGiven(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * The unknown top-level fields, as sent. Catalogue fields of other kinds count as unknown unless
 * they are null or "" (clients send `versionId: ""` everywhere). Values are the input's own, not
 * copies: copying arbitrary JSON on the hot path buys nothing while nobody writes to them.
 */
function collectExtra(
  input: Record<string, unknown>,
  roles: ReadonlyMap<string, Role>,
  keepDialect: boolean,
  unknowns: Unknowns,
  errors: FieldError[],
): Record<string, unknown> | undefined {
  let extra: Record<string, unknown> | undefined;
  for (const key of Object.keys(input)) {
    const role = roles.get(key);
    if (role === KNOWN || (role === DIALECT && !keepDialect)) continue;
    const value = input[key];
    if ((role === FOREIGN || role === DIALECT) && !isGiven(value)) continue;
    // `__proto__` is FORBIDDEN, so this assignment cannot reach a prototype.
    if (checkUnknown(key, value, role === FORBIDDEN, `/${pointerToken(key)}`, errors)) {
      extra ??= {};
      extra[key] = value;
    }
  }
  if (extra === undefined) return undefined;
  unknowns.names.push(...Object.keys(extra));
  unknowns.bytes += Buffer.byteLength(JSON.stringify(extra), 'utf8');
  return extra;
}

/** Whether an unknown name and its value may be kept; if not, says why in `errors`. */
function checkUnknown(key: string, value: unknown, forbidden: boolean, path: string, errors: FieldError[]): boolean {
  if (forbidden) {
    errors.push(forbiddenError(key, value, path));
    return false;
  }
  if (nestsDeeperThan(value, MAX_EXTRA_DEPTH)) {
    errors.push({
      path,
      message: `${quoteExcerpt(key)} nests deeper than ${MAX_EXTRA_DEPTH} levels`,
      expected: `a JSON value at most ${MAX_EXTRA_DEPTH} levels deep`,
      received: describeReceived(value),
    });
    return false;
  }
  if (value === undefined) return false;
  const inexact = inexactNumberError(value, path);
  if (inexact !== undefined) {
    errors.push(inexact);
    return false;
  }
  return true;
}

/**
 * An object value's copy: the catalogue's members that are given, the SDK dialect's deleted version
 * mapped (deletedObjects entries), and the client's own members as sent. A value that is not an
 * object is returned as is: the schema has already said what is wrong with it.
 */
function copyObject(value: unknown, members: ReadonlySet<string>, deletedVersion: boolean, path: string, unknowns: Unknowns, errors: FieldError[]): unknown {
  if (!isPlainObject(value)) return value;
  const mapped = deletedVersion ? mapDeletedVersion(value) : undefined;
  const copy: Record<string, unknown> = {};
  let own: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const member = value[key];
    if (members.has(key)) {
      if (isGiven(member)) copy[key] = member;
    } else if (deletedVersion && (key === DELETED_VERSION_DIALECT.versionId || key === DELETED_VERSION_DIALECT.flag)) {
      if (mapped === undefined && isGiven(member)) {
        own ??= {};
        own[key] = member;
      }
    } else if (checkUnknown(key, member, PROTOTYPE_NAMES.includes(key), `/${path}/${pointerToken(key)}`, errors)) {
      own ??= {};
      own[key] = member;
    }
  }
  if (mapped !== undefined) copy[mapped.field] = mapped.value;
  if (own === undefined) return copy;
  unknowns.names.push(...Object.keys(own).map((key) => `${path.replace(/\/(\d+)$/, '[$1]')}.${key}`));
  unknowns.bytes += Buffer.byteLength(JSON.stringify(own), 'utf8');
  return Object.assign(copy, own);
}

function extraTooLarge(unknowns: Unknowns, maxBytes: number): FieldError {
  const { names, bytes } = unknowns;
  const listed = names.slice(0, 3).map(quoteExcerpt).join(', ') + (names.length > 3 ? ', …' : '');
  return {
    path: '',
    message: `the unknown fields (${listed}) take ${bytes} bytes as JSON; at most ${maxBytes} are kept`,
    expected: `unknown fields of at most ${maxBytes} bytes as JSON in total`,
    received: `${bytes} bytes in ${names.length} unknown field${names.length === 1 ? '' : 's'}`,
  };
}

function nestsDeeperThan(value: unknown, levels: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (levels === 0) return true;
  for (const child of Array.isArray(value) ? value : Object.values(value)) {
    if (nestsDeeperThan(child, levels - 1)) return true;
  }
  return false;
}

function forbiddenError(key: string, value: unknown, path: string): FieldError {
  const reserved = (RESERVED_FIELDS as readonly string[]).includes(key);
  return {
    path,
    message: reserved ? `${key} is set by the server; a client may not send it` : `${key} cannot be used as a field name`,
    expected: reserved ? `no ${key} field` : 'a field name other than __proto__, constructor or prototype',
    received: describeReceived(value),
  };
}

function futureError(value: unknown, seconds: number, nowSeconds: number, maxFutureSeconds: number): FieldError {
  return {
    path: '/timestamp',
    message:
      `timestamp is ${seconds - nowSeconds} seconds ahead of the server clock (${formatTimestamp(nowSeconds)}); ` +
      `at most ${maxFutureSeconds} are accepted, so check the client's clock`,
    expected: `at most ${formatTimestamp(nowSeconds + maxFutureSeconds)}`,
    received: describeReceived(value),
  };
}

const ACTION_EXPECTED = `one of the ${ACTION_NAMES.length} event kinds (${ACTION_NAMES.slice(0, 4).join(', ')}, …)`;
const ACTION_BY_LOWERCASE = new Map(ACTION_NAMES.map((name) => [name.toLowerCase(), name]));

function actionError(value: unknown): FieldError {
  return { path: '/action', message: actionProblem(value), expected: ACTION_EXPECTED, received: describeReceived(value) };
}

function actionProblem(value: unknown): string {
  if (value === undefined || value === null) return 'action is required';
  if (typeof value !== 'string') return 'action must be a string naming the event kind';
  if (value === '') return 'action must not be empty';
  const near = ACTION_BY_LOWERCASE.get(value.toLowerCase());
  const hint = near === undefined ? '' : `; did you mean ${near}? (kinds are case-sensitive)`;
  return `action ${quoteExcerpt(value)} is not one of the ${ACTION_NAMES.length} event kinds${hint}`;
}

/** One error per path (the first found), sorted by path, at most MAX_FIELD_ERRORS. */
function invalid(errors: FieldError[], unmapped = false): { ok: false; errors: FieldError[]; unmapped: boolean } {
  const byPath = new Map<string, FieldError>();
  for (const error of errors) if (!byPath.has(error.path)) byPath.set(error.path, error);
  const sorted = [...byPath.values()].sort((a, b) => comparePointers(a.path, b.path));
  return { ok: false, errors: sorted.slice(0, MAX_FIELD_ERRORS), unmapped };
}

const INDEX = /^(0|[1-9][0-9]*)$/;

/** Token by token, array indices by number: `/deletedObjects/2` before `/deletedObjects/10`. */
function comparePointers(a: string, b: string): number {
  const left = a.split('/');
  const right = b.split('/');
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const x = left[i]!;
    const y = right[i]!;
    if (x === y) continue;
    if (INDEX.test(x) && INDEX.test(y)) return Number(x) - Number(y);
    return x < y ? -1 : 1;
  }
  return left.length - right.length;
}
