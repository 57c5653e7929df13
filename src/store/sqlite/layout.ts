/**
 * How a commit unit travels to the writer thread and which column each field lands in. Events go as
 * flat arrays (one Float64Array of numbers, one Int32Array of dictionary value indexes, one array of
 * strings) rather than as objects: cloning them costs the main thread less, and the typed arrays are
 * transferred without a copy. Dictionary values repeat (customers, buckets, providers), so each
 * distinct one is sent once per unit and the writer resolves its id once per unit.
 */
import { KINDS } from '../../events/catalogue.js';
import { DICT_FIELDS, INT_FIELDS, TEXT_FIELDS, encodeBool, encodeRest } from '../row.js';
import type { DictField, IntField, TextField } from '../row.js';
import type { CommitUnit } from '../types.js';

const DICT_COLUMNS: Record<DictField, string> = {
  provider: 'provider',
  customerId: 'customer',
  featureId: 'feature',
  clientType: 'client_type',
  clientId: 'client_id',
  bucket: 'bucket',
  objectCategory: 'object_category',
};
const TEXT_COLUMNS: Record<TextField, string> = {
  objectKey: 'object_key',
  versionId: 'version_id',
  uploadId: 'upload_id',
};
const INT_COLUMNS: Record<IntField, string> = { bytes: 'bytes', partNumber: 'part_number' };

/** The event columns after the fixed ones, in the order the writer binds and the reader selects them. */
export const FIELD_COLUMNS = [
  ...DICT_FIELDS.map((f) => DICT_COLUMNS[f]),
  ...TEXT_FIELDS.map((f) => TEXT_COLUMNS[f]),
  ...INT_FIELDS.map((f) => INT_COLUMNS[f]),
  'billable',
  'event_id',
  'rest',
];
/** Positions within FIELD_COLUMNS. */
export const F_DICT = 0;
export const F_TEXTS = F_DICT + DICT_FIELDS.length;
/** objectKey's position within TEXT_FIELDS: its column holds an object_keys id, not the text. */
export const T_OBJECT_KEY = TEXT_FIELDS.indexOf('objectKey');
export const F_INTS = F_TEXTS + TEXT_FIELDS.length;
export const F_BILLABLE = F_INTS + INT_FIELDS.length;
export const F_EVENT_ID = F_BILLABLE + 1;
export const F_REST = F_EVENT_ID + 1;

/** Per event in PackedUnit.nums: these, then INT_FIELDS. NaN stands for NULL. */
export const N_TENANT = 0;
export const N_TIMESTAMP = 1;
export const N_RECEIVED_AT = 2;
export const N_ACTION = 3;
export const N_BILLABLE = 4;
export const N_INTS = 5;
export const NUMS_PER_EVENT = N_INTS + INT_FIELDS.length;

/** Per event in PackedUnit.dict: DICT_FIELDS, each an index into PackedUnit.values, -1 for absent. */
export const DICT_PER_EVENT = DICT_FIELDS.length;

/** Per event in PackedUnit.strs: TEXT_FIELDS, then these. */
export const S_TEXTS = 0;
export const S_EVENT_ID = S_TEXTS + TEXT_FIELDS.length;
export const S_REST = S_EVENT_ID + 1;
export const STRS_PER_EVENT = S_REST + 1;

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

export function packUnit(unit: CommitUnit): { packed: PackedUnit; transfer: ArrayBuffer[] } {
  const count = unit.events.length;
  const nums = new Float64Array(count * NUMS_PER_EVENT);
  const dict = new Int32Array(count * DICT_PER_EVENT);
  const values: string[] = [];
  const valueIndex = new Map<string, number>();
  const strs = new Array<string | null>(count * STRS_PER_EVENT);
  for (let i = 0; i < count; i++) {
    const { tenantId, receivedAt, event } = unit.events[i]!;
    const n = i * NUMS_PER_EVENT;
    nums[n + N_TENANT] = tenantId;
    nums[n + N_TIMESTAMP] = event.timestamp;
    nums[n + N_RECEIVED_AT] = receivedAt;
    nums[n + N_ACTION] = KINDS[event.action].code;
    nums[n + N_BILLABLE] = encodeBool(event.isBillableEgress) ?? NaN;
    for (let f = 0; f < INT_FIELDS.length; f++) nums[n + N_INTS + f] = event[INT_FIELDS[f]!] ?? NaN;
    const d = i * DICT_PER_EVENT;
    for (let f = 0; f < DICT_FIELDS.length; f++) {
      const value = event[DICT_FIELDS[f]!] ?? null;
      let index = -1;
      if (value !== null) {
        index = valueIndex.get(value) ?? -1;
        if (index === -1) {
          index = values.push(value) - 1;
          valueIndex.set(value, index);
        }
      }
      dict[d + f] = index;
    }
    const s = i * STRS_PER_EVENT;
    for (let f = 0; f < TEXT_FIELDS.length; f++) strs[s + S_TEXTS + f] = event[TEXT_FIELDS[f]!] ?? null;
    strs[s + S_EVENT_ID] = event.eventId ?? null;
    strs[s + S_REST] = encodeRest(event);
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
