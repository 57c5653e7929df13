/**
 * The usage fold's sums, kept by the writer while it inserts the events: per rollup shape, the
 * measures of each distinct shape key, across transactions until a fold writes them with one upsert
 * per key and shape. A fold from the events (usage-sql.ts stageFromEvents, rollupFromStage) sorts
 * its chunk once per shape, ~0.55 µs per event each whatever the shape's size; these sums cost the
 * writer a hash probe per event and shape, and the fold only the rows it writes. Only an
 * optimisation: the events stay the truth. The sums cover one run of seqs (from, to], whole
 * committed transactions; any seqs they do not cover (stored before a restart, by a transaction
 * that failed or would take the sums past their bound, sums past the safe integers) are folded from
 * the events as before. Both give the same rows: the rollups cannot tell which one a fold used.
 *
 * A fold costs per distinct key, and the keys of a stretch of traffic repeat (the bench's: 12,000
 * events gave 9,700 rows of its finest shape, 43,000 gave 24,800), so the longer the sums run the
 * fewer upserts per event. They run until the writer asks for a fold (past a quarter of their bound,
 * or a transaction not summed), well before that bound, so they do not quietly stop summing.
 */
import type { Database, Statement } from 'better-sqlite3';
import { DIMENSION_COLUMN, MEASURES, MEASURE_COLUMNS, STORED_MEASURE_COLUMNS, WIDE_MEASURE_COLUMNS, GRAIN_HOURS, addMeasures, keyColumns } from '../../usage/shapes.js';
import type { Shape } from '../../usage/shapes.js';
import { addSetSql } from '../wide.js';

/**
 * At most this many rows over every shape (or one transaction's, summed alone): they cost ~100 bytes
 * each, and the fold that writes them takes about 1.3 µs a row. A commit that could take the sums
 * past it is not summed, nor are the ones after it until the sums are taken (its seqs are folded from
 * the events). The writer asks for a fold at a quarter of it (foldRows), which leaves room for three
 * of the largest transactions (10,000 events, 6 shapes: 60,000 new rows at most) committed before the
 * fold's take reaches it; batches of 1,000 with 8 units in flight make one.
 */
export const MAX_SUM_ROWS = 262_144;

/** Rows past which the writer asks for a fold (a quarter of the bound given). */
const foldRows = (maxRows: number) => Math.floor(maxRows / 4);

/** Upserts per statement where a fold has that many rows of a shape: each run costs its call and bindings setup. */
const UPSERT_ROWS = 16;

/** Measures summed whole (MEASURES order); the fold splits the byte ones (wide.ts). */
const MEASURE_COUNT = MEASURES.length;
const WIDE = MEASURE_COLUMNS.flatMap((c, i) => (WIDE_MEASURE_COLUMNS.includes(c) ? [i] : []));
const LOW = 2 ** 24;

/**
 * One shape's rows by key, in typed arrays with a hash table of their own: a `Map` keyed by a string
 * made per event cost the writer about what the fold saved (measured: 8% of its CPU).
 */
class KeyedSums {
  rows = 0;
  keys: Float64Array<ArrayBuffer>;
  sums: Float64Array<ArrayBuffer>;
  /** The key `find` looks for, filled by the caller. */
  readonly key: Float64Array<ArrayBuffer>;
  /** Open addressing: a row's index + 1, 0 for an empty slot; kept at most half full. */
  #slots: Int32Array;

  /** `capacity`: rows before the arrays grow (a power of two). */
  constructor(
    readonly keyCount: number,
    capacity = 64,
  ) {
    this.keys = new Float64Array(capacity * keyCount);
    this.sums = new Float64Array(capacity * MEASURE_COUNT);
    this.key = new Float64Array(keyCount);
    this.#slots = new Int32Array(capacity * 2);
  }

  /** The row of `key`, added (its sums 0) if new. */
  find(): number {
    const n = this.keyCount;
    const mask = this.#slots.length - 1;
    for (let slot = this.#hash(this.key, 0) & mask; ; slot = (slot + 1) & mask) {
      const found = this.#slots[slot]!;
      if (found === 0) return this.#add(slot);
      const at = (found - 1) * n;
      let k = 0;
      while (k < n && this.keys[at + k] === this.key[k]) k++;
      if (k === n) return found - 1;
    }
  }

  clear(): void {
    this.rows = 0;
    this.#slots.fill(0);
  }

  /** A key's hash: where its probe starts. */
  #hash(keys: Float64Array, at: number): number {
    let h = 0;
    for (let k = 0; k < this.keyCount; k++) h = Math.imul(h ^ (keys[at + k]! | 0), 0x9e3779b1) ^ (h >>> 15);
    return h;
  }

  #add(slot: number): number {
    const row = this.rows++;
    if (this.rows * this.keyCount > this.keys.length) {
      this.keys = grow(this.keys);
      this.sums = grow(this.sums);
    }
    this.keys.set(this.key, row * this.keyCount);
    this.sums.fill(0, row * MEASURE_COUNT, (row + 1) * MEASURE_COUNT);
    if (this.rows * 2 <= this.#slots.length) this.#slots[slot] = row + 1;
    else this.#rehash();
    return row;
  }

  /** Twice the slots, every row placed again (the new one included). */
  #rehash(): void {
    this.#slots = new Int32Array(this.#slots.length * 2);
    const mask = this.#slots.length - 1;
    for (let row = 0; row < this.rows; row++) {
      let slot = this.#hash(this.keys, row * this.keyCount) & mask;
      while (this.#slots[slot] !== 0) slot = (slot + 1) & mask;
      this.#slots[slot] = row + 1;
    }
  }
}

/** The least power of two, at least 64, that holds `rows` rows. */
const capacityFor = (rows: number) => Math.max(64, 2 ** Math.ceil(Math.log2(rows)));

function grow(a: Float64Array): Float64Array<ArrayBuffer> {
  const b = new Float64Array(a.length * 2);
  b.set(a);
  return b;
}

/** Adds `rows` values rows to the shape's rows: each byte measure in canonical parts (addSetSql), as rollupFromStage adds them. */
export function upsertSql(shape: Shape, rows: number): string {
  const columns = [...keyColumns(shape), ...STORED_MEASURE_COLUMNS];
  const row = `(${columns.map(() => '?').join(', ')})`;
  return `INSERT INTO ${shape.table} (${columns.join(', ')}) VALUES ${Array.from({ length: rows }, () => row).join(', ')}
ON CONFLICT DO UPDATE SET ${addSetSql(MEASURE_COLUMNS, WIDE_MEASURE_COLUMNS)}`;
}

/** A shape's upserts: one row, and UPSERT_ROWS rows. */
export interface ShapeUpserts {
  one: Statement;
  many: Statement;
}

export const prepareUpserts = (db: Database, shapes: readonly Shape[]): ShapeUpserts[] =>
  shapes.map((shape) => ({ one: db.prepare(upsertSql(shape, 1)), many: db.prepare(upsertSql(shape, UPSERT_ROWS)) }));

export class PendingSums {
  readonly #tenant: number;
  readonly #timestamp: number;
  readonly #action: number;
  readonly #bytesAt: number;
  readonly #billable: number;
  /** Per shape: seconds per unit of its grain, the insert argument of each dimension, its rows. */
  readonly #shapes: { seconds: number; dims: number[]; sums: KeyedSums }[];
  /** Seqs (from, to] covered; -1 when none are. */
  #from = -1;
  #to = -1;
  /** Whether the open transaction is summing. */
  #summing = false;
  /** A transaction since #from was not summed: its seqs and those after it wait for a fold. */
  #refused = false;
  /** Whether the writer has asked for a fold of these sums. */
  #asked = false;
  /** Bytes summed since #from: while within 2^53, so is every sum. */
  #bytes = 0;

  /** `columns`: the event insert's columns, in the order of the arguments `add` is given. */
  constructor(columns: readonly string[], shapes: readonly Shape[], readonly maxRows = MAX_SUM_ROWS) {
    const at = (column: string) => {
      const i = columns.indexOf(column);
      if (i === -1) throw new Error(`the event insert has no column ${column}`);
      return i;
    };
    this.#tenant = at('tenant');
    this.#timestamp = at('timestamp');
    this.#action = at('action');
    this.#bytesAt = at('bytes');
    this.#billable = at('billable');
    this.#shapes = shapes.map((shape) => ({
      seconds: GRAIN_HOURS[shape.grain] * 3600,
      dims: shape.dimensions.map((d) => at(DIMENSION_COLUMN[d])),
      sums: new KeyedSums(2 + shape.dimensions.length),
    }));
  }

  /** Rows over every shape. */
  get rows(): number {
    let rows = 0;
    for (const shape of this.#shapes) rows += shape.sums.rows;
    return rows;
  }

  /** Whether a transaction of `events` events could take the sums past `maxRows`. */
  full(events: number): boolean {
    return this.#from !== -1 && this.rows + events * this.#shapes.length > this.maxRows;
  }

  /**
   * A transaction of up to `events` events begins, its seqs after `first`: it sums them if they follow
   * the seqs covered (or none are) and stay within `maxRows`.
   */
  begin(first: number, events: number): void {
    this.#summing = (this.#from === -1 || this.#to === first) && !this.full(events);
    if (!this.#summing && this.#from !== -1) this.#refused = true;
  }

  /**
   * Whether to ask for a fold now (once per run of sums): they are past a quarter of their bound, or a
   * transaction was not summed (the later ones will not be either until they are taken).
   */
  foldDue(): boolean {
    if (this.#asked || this.#from === -1 || (!this.#refused && this.rows < foldRows(this.maxRows))) return false;
    this.#asked = true;
    return true;
  }

  /** An event inserted by the open transaction, as the arguments of its insert from `at`. */
  add(args: readonly unknown[], at: number): void {
    if (!this.#summing) return;
    const tenant = args[at + this.#tenant] as number;
    const timestamp = args[at + this.#timestamp] as number;
    const action = args[at + this.#action] as number;
    const bytes = args[at + this.#bytesAt] as number | null;
    const billable = args[at + this.#billable] as number | null;
    this.#bytes += bytes ?? 0;
    for (const { seconds, dims, sums } of this.#shapes) {
      // A shape's key: tenant, hour or day, then each dimension's id (0 for none), as keySql groups.
      const key = sums.key;
      key[0] = tenant;
      key[1] = Math.trunc(timestamp / seconds);
      for (let d = 0; d < dims.length; d++) key[2 + d] = (args[at + dims[d]!] as number | null) ?? 0;
      // Found first: adding a row may replace `sums.sums`.
      const row = sums.find();
      addMeasures(sums.sums, row * MEASURE_COUNT, action, bytes, billable);
    }
  }

  /** The open transaction committed seqs (first, to] (begin's `first`). */
  committed(first: number, to: number): void {
    if (!this.#summing) return;
    this.#summing = false;
    // Past 2^53 a double's sums are not exact: every seq they cover is folded from the events.
    if (this.#bytes > Number.MAX_SAFE_INTEGER) this.drop();
    // Nothing stored (every event a duplicate): no run begins. Taken, sums (c, c] lay at the cursor
    // before seqs they did not cover, and the fold bounded its step from the events by them: no step.
    else if (this.#from === -1 && to === first) return;
    else {
      if (this.#from === -1) this.#from = first;
      this.#to = to;
    }
  }

  /** No sums kept: the open transaction failed, or their seqs are folded from the events. */
  drop(): void {
    for (const shape of this.#shapes) shape.sums.clear();
    this.#from = this.#to = -1;
    this.#summing = this.#refused = this.#asked = false;
    this.#bytes = 0;
  }

  /**
   * The sums kept, handed over (their arrays to be transferred to the derived thread, which folds
   * them), or null if none are: the next transaction starts a new run.
   */
  take(): SumsBatch | null {
    if (this.#from === -1) return null;
    const batch: SumsBatch = {
      from: this.#from,
      to: this.#to,
      shapes: this.#shapes.map(({ sums }) => ({ rows: sums.rows, keyCount: sums.keyCount, keys: sums.keys, sums: sums.sums })),
    };
    // Sized for as many rows as these reached: the keys of the next stretch are mostly the same ones,
    // and growing to them again rehashed every row at each doubling.
    for (const shape of this.#shapes) shape.sums = new KeyedSums(shape.sums.keyCount, capacityFor(shape.sums.rows));
    this.drop();
    return batch;
  }
}

/** Sums of the seqs (from, to], per shape (SHAPES order): `rows` rows of keys and measures (MEASURES order). */
export interface SumsBatch {
  from: number;
  to: number;
  shapes: { rows: number; keyCount: number; keys: Float64Array<ArrayBuffer>; sums: Float64Array<ArrayBuffer> }[];
}

/** The buffers of a batch's arrays, to transfer it rather than copy it. */
export const batchBuffers = (batch: SumsBatch): ArrayBuffer[] => batch.shapes.flatMap((shape) => [shape.keys.buffer, shape.sums.buffer]);

/** Adds a batch's rows to the rollups, each shape's by its `upserts` (SHAPES order). */
export function writeBatch(batch: SumsBatch, upserts: readonly ShapeUpserts[]): void {
  for (let i = 0; i < batch.shapes.length; i++) write(batch.shapes[i]!, upserts[i]!);
}

/** The shape's rows as upserts' arguments: key, then stored measures (each byte one split in canonical parts). */
function write(sums: SumsBatch['shapes'][number], upserts: ShapeUpserts): void {
  const n = sums.keyCount;
  const width = n + STORED_MEASURE_COLUMNS.length;
  // A plain array, spread: spreading typed-array views goes through their iterators.
  const args = new Array<number>(width * UPSERT_ROWS).fill(0);
  const { keys } = sums;
  // In the table's key order, as a GROUP BY gives them: each upsert then finds its page where the last
  // one left off (in the order the rows were added, each searched the table afresh: twice the cost).
  const order = new Int32Array(sums.rows);
  for (let row = 0; row < sums.rows; row++) order[row] = row;
  order.sort((a, b) => {
    for (let k = 0; k < n; k++) {
      const d = keys[a * n + k]! - keys[b * n + k]!;
      if (d !== 0) return d;
    }
    return 0;
  });
  let filled = 0;
  for (const row of order) {
    const at = filled * width;
    for (let k = 0; k < n; k++) args[at + k] = keys[row * n + k]!;
    for (let m = 0; m < MEASURE_COUNT; m++) args[at + n + m] = sums.sums[row * MEASURE_COUNT + m]!;
    WIDE.forEach((m, w) => {
      const value = sums.sums[row * MEASURE_COUNT + m]!;
      args[at + n + m] = value % LOW;
      args[at + n + MEASURE_COUNT + w] = Math.floor(value / LOW);
    });
    if (++filled === UPSERT_ROWS) {
      upserts.many.run(...args);
      filled = 0;
    }
  }
  for (let row = 0; row < filled; row++) upserts.one.run(...args.slice(row * width, (row + 1) * width));
}
