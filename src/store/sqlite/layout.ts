/**
 * How a commit unit travels to the writer thread and which column each field lands in. Events go as
 * flat arrays (one Float64Array of numbers, one Int32Array of dictionary value indexes, one array of
 * strings) rather than as objects: cloning them costs the main thread less, and the typed arrays are
 * transferred without a copy. Dictionary values repeat (customers, buckets, providers), so each
 * distinct one is sent once per unit and the writer resolves its id once per unit.
 */
import { KINDS } from '../../events/catalogue.js';
import type { EventRecord } from '../../events/catalogue.js';
import { BOOL_FIELDS, COLUMN_FIELDS, DICT_FIELDS, INT_FIELDS, JSON_FIELDS, TEXT_FIELDS, encodeRest, sqliteColumn } from '../row.js';
import type { TextField } from '../row.js';
import type { CommitUnit } from '../types.js';

/** The event columns after the fixed ones, in the order the writer binds and the reader selects them. */
export const FIELD_COLUMNS = [...COLUMN_FIELDS.map(sqliteColumn), 'rest'];

/** Each field's position within its class's list. */
const positions = <F extends string>(fields: readonly F[]) => Object.fromEntries(fields.map((f, i) => [f, i])) as Record<F, number>;
const TEXT_AT = positions(TEXT_FIELDS);

/** Per event in PackedUnit.nums: these, then INT_FIELDS, then BOOL_FIELDS (1/0). NaN stands for NULL. */
const N_TENANT = 0;
const N_TIMESTAMP = 1;
const N_RECEIVED_AT = 2;
const N_ACTION = 3;
const N_INTS = 4;
const N_BOOLS = N_INTS + INT_FIELDS.length;
const NUMS_PER_EVENT = N_BOOLS + BOOL_FIELDS.length;

/** Per event in PackedUnit.dict: DICT_FIELDS, each an index into PackedUnit.values, -1 for absent. */
const DICT_PER_EVENT = DICT_FIELDS.length;

/** Per event in PackedUnit.strs: TEXT_FIELDS, then the JSON rest. */
const S_REST = TEXT_FIELDS.length;
const STRS_PER_EVENT = S_REST + 1;
const OBJECT_KEY_AT = TEXT_AT.objectKey;

export interface PackedQuarantine {
  tenantId: number;
  receivedAt: number;
  code: string;
  /** FieldError[] as JSON. */
  errors: string;
  source: string;
  index: number | null;
  /** A copy with its own ArrayBuffer, so that it can be transferred. */
  body: Uint8Array;
  truncated: boolean;
}

export interface PackedUnit {
  count: number;
  nums: Float64Array;
  dict: Int32Array;
  /** The unit's distinct dictionary values, each once. */
  values: string[];
  strs: (string | null)[];
  quarantine: PackedQuarantine[];
  replayed: { ids: number[]; at: number } | null;
}

/**
 * Where each stored field of an event goes, by name: its class (high bits) and its position within
 * the class. packUnit reads an event's own fields once, in one pass, rather than looking up every
 * stored field by name: events of different kinds have different shapes, and a lookup by name on
 * objects of many shapes is the slow, megamorphic kind (measured: half packUnit's time).
 */
const DICT = 0;
const TEXT = 1;
const INT = 2;
const BOOL = 3;
const JSON_REST = 4;
const SLOT_BITS = 8;
const SLOTS = new Map<string, number>();
for (const [kind, fields] of [[DICT, DICT_FIELDS], [TEXT, TEXT_FIELDS], [INT, INT_FIELDS], [BOOL, BOOL_FIELDS], [JSON_REST, JSON_FIELDS]] as const) {
  for (let at = 0; at < fields.length; at++) SLOTS.set(fields[at]!, (kind << SLOT_BITS) | at);
}
const AT_MASK = (1 << SLOT_BITS) - 1;

export function packUnit(unit: CommitUnit): { packed: PackedUnit; transfer: ArrayBuffer[] } {
  const count = unit.events.length;
  // Absent unless the event has the field: NaN (NULL) for numbers, -1 for dictionary values, null for strings.
  const nums = new Float64Array(count * NUMS_PER_EVENT).fill(NaN);
  const dict = new Int32Array(count * DICT_PER_EVENT).fill(-1);
  const values: string[] = [];
  const valueIndex = new Map<string, number>();
  // Grown by push, not `new Array(n).fill(null)`: a holey array is cloned to the writer element by
  // element with its index (V8's sparse form), twice the cost on each side (measured: 0.2 µs per event).
  const strs: (string | null)[] = [];
  for (let k = count * STRS_PER_EVENT; k > 0; k--) strs.push(null);
  for (let i = 0; i < count; i++) {
    const { tenantId, receivedAt } = unit.events[i]!;
    const event: EventRecord = unit.events[i]!.event;
    const n = i * NUMS_PER_EVENT;
    const d = i * DICT_PER_EVENT;
    const s = i * STRS_PER_EVENT;
    nums[n + N_TENANT] = tenantId;
    nums[n + N_TIMESTAMP] = event.timestamp;
    nums[n + N_RECEIVED_AT] = receivedAt;
    nums[n + N_ACTION] = KINDS[event.action].code;
    let rest = event.extra !== undefined && Object.keys(event.extra).length > 0;
    for (const name in event) {
      const slot = SLOTS.get(name);
      if (slot === undefined) continue;
      const value: unknown = (event as Record<string, unknown>)[name];
      if (value === undefined) continue;
      const at = slot & AT_MASK;
      switch (slot >> SLOT_BITS) {
        case DICT: {
          if (value === null) break;
          let index = valueIndex.get(value as string);
          if (index === undefined) {
            index = values.push(value as string) - 1;
            valueIndex.set(value as string, index);
          }
          dict[d + at] = index;
          break;
        }
        case TEXT:
          strs[s + at] = value as string | null;
          break;
        case INT:
          if (value !== null) nums[n + N_INTS + at] = value as number;
          break;
        case BOOL:
          nums[n + N_BOOLS + at] = value ? 1 : 0;
          break;
        case JSON_REST:
          rest = true;
          break;
      }
    }
    // The JSON column only for the few events that have something for it (row.ts encodeRest).
    if (rest) strs[s + S_REST] = encodeRest(event);
  }
  const transfer: ArrayBuffer[] = [nums.buffer, dict.buffer];
  const quarantine = unit.quarantine.map((q): PackedQuarantine => {
    const body = new Uint8Array(q.body);
    transfer.push(body.buffer);
    return {
      tenantId: q.tenantId,
      receivedAt: q.receivedAt,
      code: q.code,
      errors: JSON.stringify(q.errors),
      source: q.source,
      index: q.index ?? null,
      body,
      truncated: q.truncated,
    };
  });
  return { packed: { count, nums, dict, values, strs, quarantine, replayed: unit.replayed ?? null }, transfer };
}

const orNull = (value: number): number | null => (Number.isNaN(value) ? null : value);

/**
 * One event of a packed unit: the writer thread's typed view of what the main thread packed. Positions stay in this file. `at` moves the view, so one view serves a whole unit
 * without allocating per event.
 */
export class PackedEvent {
  #unit: PackedUnit | undefined;
  #n = 0;
  #d = 0;
  #s = 0;

  at(unit: PackedUnit, index: number): this {
    this.#unit = unit;
    this.#n = index * NUMS_PER_EVENT;
    this.#d = index * DICT_PER_EVENT;
    this.#s = index * STRS_PER_EVENT;
    return this;
  }

  get tenantId(): number {
    return this.#unit!.nums[this.#n + N_TENANT]!;
  }

  get timestamp(): number {
    return this.#unit!.nums[this.#n + N_TIMESTAMP]!;
  }

  get receivedAt(): number {
    return this.#unit!.nums[this.#n + N_RECEIVED_AT]!;
  }

  /** The kind's code (catalogue KINDS). */
  get actionCode(): number {
    return this.#unit!.nums[this.#n + N_ACTION]!;
  }

  text(field: TextField): string | null {
    return this.#unit!.strs[this.#s + TEXT_AT[field]] ?? null;
  }

  /**
   * Writes the event's FIELD_COLUMNS values into `args` from `at` on: a dictionary value as its id
   * in `dictIds`, the object key as `objectKeyId` gives it, NULL for what is absent. By position, for
   * the writer's insert loop: a lookup by field name per column cost it ~0.2 µs per event.
   */
  writeColumns(args: unknown[], at: number, dictIds: readonly number[], objectKeyId: (key: string) => number): void {
    const { nums, dict, strs } = this.#unit!;
    let a = at;
    for (let k = 0; k < DICT_PER_EVENT; k++) {
      const index = dict[this.#d + k]!;
      args[a++] = index === -1 ? null : dictIds[index];
    }
    for (let k = 0; k < S_REST; k++) {
      const text = strs[this.#s + k] ?? null;
      args[a++] = text !== null && k === OBJECT_KEY_AT ? objectKeyId(text) : text;
    }
    for (let k = N_INTS; k < NUMS_PER_EVENT; k++) args[a++] = orNull(nums[this.#n + k]!);
    args[a] = strs[this.#s + S_REST] ?? null;
  }
}
