/**
 * The usage fold's stage, summed by the writer while it inserts the events, so that a fold need not
 * read and sort its chunk of events again (stageFromEvents): that was ~1 µs per event of the writer's
 * CPU under SDK traffic, most of a fold. Only an optimisation: the events stay the truth. Each
 * committed transaction's sums are kept for the seqs it stored; a fold whose chunk starts where
 * they start stages them, and any seqs they do not cover (after a restart, a rolled-back or failed
 * commit, sums past the safe integers, more pending than kept, events that hardly share stage rows)
 * are staged from the events as before.
 * Both give the same rows, so the rollups cannot tell which one a fold used.
 */
import type { Statement } from 'better-sqlite3';
import { DIMENSIONS, DIMENSION_COLUMN, STORED_MEASURE_COLUMNS, addMeasures } from '../../usage/shapes.js';

/** Beyond this many kept rows a transaction's sums are not kept (its events are staged from the table). */
const MAX_KEPT_ROWS = 100_000;

/**
 * A transaction's sums are kept only where its events make at most one stage row per EVENTS_PER_ROW
 * of them: staging a kept row costs the fold more than reading and sorting an event (~1.5 against
 * ~1 µs), so sums pay only where events share rows, as SDK traffic's do (one row per 10-40 events);
 * the reference mix's spread timestamps and dimensions make about one row per event. Past
 * SUMMED_ROWS rows such a transaction stops summing.
 */
const EVENTS_PER_ROW = 4;
const SUMMED_ROWS = 1024;

/** A stage row's key: the stage's key columns (STAGE_KEYS); then its measures (STORED_MEASURE_COLUMNS). */
const KEY_COUNT = 2 + DIMENSIONS.length;
const MEASURE_COUNT = STORED_MEASURE_COLUMNS.length;

interface Segment {
  /** Seqs (from, to]. */
  from: number;
  to: number;
  rows: number;
  keys: Float64Array;
  sums: Float64Array;
}

/** A key's hash: where its probe starts. */
function hashOf(keys: Float64Array, at: number): number {
  let h = 0;
  for (let k = 0; k < KEY_COUNT; k++) h = Math.imul(h ^ (keys[at + k]! | 0), 0x9e3779b1) ^ (h >>> 15);
  return h;
}

/**
 * A transaction's stage rows by key, in typed arrays with a hash table of their own: a `Map` keyed by
 * a string made per event cost the writer about what the fold saved (measured: 8% of its CPU).
 */
class StageRows {
  rows = 0;
  keys: Float64Array<ArrayBuffer> = new Float64Array(64 * KEY_COUNT);
  sums: Float64Array<ArrayBuffer> = new Float64Array(64 * MEASURE_COUNT);
  /** The key `find` looks for, filled by the caller. */
  readonly key = new Float64Array(KEY_COUNT);
  /** Open addressing: a row's index + 1, 0 for an empty slot; kept at most half full. */
  #slots = new Int32Array(128);

  /** The row of `key`, added (its sums 0) if new. */
  find(): number {
    const mask = this.#slots.length - 1;
    for (let slot = hashOf(this.key, 0) & mask; ; slot = (slot + 1) & mask) {
      const found = this.#slots[slot]!;
      if (found === 0) return this.#add(slot);
      const at = (found - 1) * KEY_COUNT;
      let k = 0;
      while (k < KEY_COUNT && this.keys[at + k] === this.key[k]) k++;
      if (k === KEY_COUNT) return found - 1;
    }
  }

  clear(): void {
    this.rows = 0;
    this.#slots.fill(0);
  }

  #add(slot: number): number {
    const row = this.rows++;
    if (this.rows * KEY_COUNT > this.keys.length) {
      this.keys = grow(this.keys);
      this.sums = grow(this.sums);
    }
    this.keys.set(this.key, row * KEY_COUNT);
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
      let slot = hashOf(this.keys, row * KEY_COUNT) & mask;
      while (this.#slots[slot] !== 0) slot = (slot + 1) & mask;
      this.#slots[slot] = row + 1;
    }
  }
}

function grow(a: Float64Array): Float64Array<ArrayBuffer> {
  const b = new Float64Array(a.length * 2);
  b.set(a);
  return b;
}

export class PendingStage {
  readonly #tenant: number;
  readonly #timestamp: number;
  /** Positions of the dimension columns (DIMENSIONS order) in an insert's arguments. */
  readonly #dims: number[];
  readonly #action: number;
  readonly #bytes: number;
  readonly #billable: number;
  /** Committed transactions' sums not folded yet, in seq order. */
  #segments: Segment[] = [];
  #keptRows = 0;
  /** The open transaction's rows. */
  readonly #open = new StageRows();
  /** Events the open transaction summed; -1 once it stopped (its sums will not be kept). */
  #summed = 0;

  /** `columns`: the event insert's columns, in the order of the arguments `add` is given. */
  constructor(columns: readonly string[]) {
    const at = (column: string) => {
      const i = columns.indexOf(column);
      if (i === -1) throw new Error(`the event insert has no column ${column}`);
      return i;
    };
    this.#tenant = at('tenant');
    this.#timestamp = at('timestamp');
    this.#dims = DIMENSIONS.map((d) => at(DIMENSION_COLUMN[d]));
    this.#action = at('action');
    this.#bytes = at('bytes');
    this.#billable = at('billable');
  }

  /** A transaction begins: whatever an earlier one left open is dropped (it did not commit). */
  begin(): void {
    this.#open.clear();
    this.#summed = 0;
  }

  /** An event inserted by the open transaction, as the arguments of its insert from `at`. */
  add(args: readonly unknown[], at: number): void {
    if (this.#summed === -1) return;
    const open = this.#open;
    // The stage's key: tenant, hour, then each dimension's id (0 for none), as stageFromEvents groups.
    const key = open.key;
    key[0] = args[at + this.#tenant] as number;
    key[1] = Math.trunc((args[at + this.#timestamp] as number) / 3600);
    for (let d = 0; d < this.#dims.length; d++) key[2 + d] = (args[at + this.#dims[d]!] as number | null) ?? 0;
    const row = open.find();
    this.#summed++;
    if (open.rows > SUMMED_ROWS && open.rows * EVENTS_PER_ROW > this.#summed) {
      this.#summed = -1;
      return;
    }
    addMeasures(open.sums, row * MEASURE_COUNT, args[at + this.#action] as number, args[at + this.#bytes] as number | null, args[at + this.#billable] as number | null);
  }

  /** The open transaction committed seqs (from, to]. */
  committed(from: number, to: number): void {
    const { rows, keys, sums } = this.#open;
    if (to <= from || rows * EVENTS_PER_ROW > this.#summed || this.#keptRows + rows > MAX_KEPT_ROWS) return;
    // Sums past 2^53 are not exact in a double: those seqs are staged from the events. So are the
    // transaction's totals: the rollups add stage rows whole (usage-sql.ts rollupFromStage), and a
    // fold's chunk must stay far within 2^63 however its rows are grouped.
    const kept = sums.slice(0, rows * MEASURE_COUNT);
    const totals = new Float64Array(MEASURE_COUNT);
    for (let i = 0; i < kept.length; i++) totals[i % MEASURE_COUNT]! += kept[i]!;
    if (!totals.every(Number.isSafeInteger)) return;
    this.#segments.push({ from, to, rows, keys: keys.slice(0, rows * KEY_COUNT), sums: kept });
    this.#keptRows += rows;
  }

  /**
   * Stages the chunk of seqs a fold takes after `cursor`: kept sums when they start at the cursor
   * (whole transactions: the first, then more while the chunk stays within `maxEvents` and `goal`),
   * else the events up to the first kept seq, by `fromEvents`. Returns the last seq staged.
   */
  stage(cursor: number, goal: number, maxEvents: number, insert: Statement, fromEvents: (from: number, to: number) => void): number {
    // Sums the cursor has passed (folded from the events) are of no more use.
    while (this.#segments.length > 0 && this.#segments[0]!.from < cursor) this.#drop();
    const first = this.#segments[0];
    if (first === undefined || first.from > cursor) {
      const to = Math.min(goal, cursor + maxEvents, first?.from ?? Infinity);
      fromEvents(cursor, to);
      return to;
    }
    let to = cursor;
    // A plain array, spread: spreading typed-array views goes through their iterators.
    const args = new Array<number>(KEY_COUNT + MEASURE_COUNT).fill(0);
    for (const segment of this.#segments) {
      if (segment.from !== to || (to > cursor && (segment.to > goal || segment.to - cursor > maxEvents))) break;
      const { keys, sums } = segment;
      for (let row = 0; row < segment.rows; row++) {
        for (let k = 0; k < KEY_COUNT; k++) args[k] = keys[row * KEY_COUNT + k]!;
        for (let m = 0; m < MEASURE_COUNT; m++) args[KEY_COUNT + m] = sums[row * MEASURE_COUNT + m]!;
        insert.run(...args);
      }
      to = segment.to;
    }
    return to;
  }

  /** The fold that staged up to `to` committed: its sums are done with. */
  folded(to: number): void {
    while (this.#segments.length > 0 && this.#segments[0]!.to <= to) this.#drop();
  }

  #drop(): void {
    this.#keptRows -= this.#segments.shift()!.rows;
  }
}
