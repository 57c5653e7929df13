/**
 * A batch as the bytes the server takes: the JSON array `[line,line,…]`, with where each line
 * starts, so that a line can be read back (a rejected event for onError) and a batch split (413).
 * Events are written into it as they are queued: the queue holds bytes outside the JS heap, not a
 * string per event, so queued events are not copied by every young-generation collection nor
 * promoted to the old one, and sending needs no join and no encoding of the batch.
 */
export class BatchBody {
  /** `starts[i]` is where line i begins; the line ends one byte before `starts[i + 1]` (its `,` or `]`). */
  constructor(
    readonly json: Buffer,
    private readonly starts: readonly number[],
  ) {}

  get count(): number {
    return this.starts.length - 1;
  }

  /** Line i; undefined when there is none (an index the server should not have given). */
  line(i: number): string | undefined {
    if (!(Number.isInteger(i) && i >= 0 && i < this.count)) return undefined;
    return this.json.toString('utf8', this.starts[i], this.starts[i + 1]! - 1);
  }

  /** Lines from..to-1 as a batch of their own. */
  slice(from: number, to: number): BatchBody {
    const offset = this.starts[from]! - 1;
    const json = Buffer.allocUnsafe(this.starts[to]! - offset);
    this.json.copy(json, 0, offset, this.starts[to]! - 1);
    json[0] = 0x5b; // [
    json[json.length - 1] = 0x5d; // ]
    return new BatchBody(json, this.starts.slice(from, to + 1).map((s) => s - offset));
  }

  static of(lines: readonly string[]): BatchBody {
    const writer = new BodyWriter();
    for (const line of lines) writer.add(line);
    return writer.finish();
  }
}

const FIRST_BYTES = 64 * 1024;
/**
 * Most bytes the writer keeps between batches: a batch of 1,000 SDK events is ~250 KB. One very
 * large event grows the buffer to three times its length; that is not kept for every batch after.
 */
const KEPT_BYTES = 1024 * 1024;

/** Builds one BatchBody at a time in a buffer kept from batch to batch. */
export class BodyWriter {
  private buffer = Buffer.allocUnsafeSlow(FIRST_BYTES);
  private at = 1;
  private starts: number[] = [];

  get count(): number {
    return this.starts.length;
  }

  /** Bytes held for the next batch. */
  get capacity(): number {
    return this.buffer.length;
  }

  /** Appends one line (a JSON object); returns its size in UTF-8 bytes. */
  add(line: string): number {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit; then the `,` or `]`.
    const most = this.at + line.length * 3 + 1;
    if (most > this.buffer.length) {
      const larger = Buffer.allocUnsafeSlow(Math.max(most, this.buffer.length * 2));
      this.buffer.copy(larger, 0, 0, this.at);
      this.buffer = larger;
    }
    this.starts.push(this.at);
    const size = this.buffer.write(line, this.at);
    this.at += size;
    this.buffer[this.at++] = 0x2c; // ,
    return size;
  }

  /** The lines added since the last finish, as a batch; the writer starts a new one. */
  finish(): BatchBody {
    const starts = this.starts;
    starts.push(this.at);
    let json: Buffer;
    if (starts.length === 1) json = Buffer.from('[]');
    else {
      // A copy of its exact size: the writer's buffer is the next batch's, and may be larger.
      json = Buffer.allocUnsafeSlow(this.at);
      this.buffer.copy(json, 0, 0, this.at);
      json[0] = 0x5b; // [
      json[this.at - 1] = 0x5d; // ] in place of the last line's ,
    }
    this.at = 1;
    this.starts = [];
    if (this.buffer.length > KEPT_BYTES) this.buffer = Buffer.allocUnsafeSlow(FIRST_BYTES);
    return new BatchBody(json, starts);
  }
}
