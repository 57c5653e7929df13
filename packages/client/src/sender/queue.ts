/**
 * The sender's queue: events as JSON lines, grouped into batches. The open batch takes appends;
 * sealed batches wait, oldest first, to be sent. In memory by default, each batch written as it
 * fills into the body it is sent as (BatchBody); with a spool directory every line is written to a
 * file instead as it is appended (one file per batch), so a process that dies leaves its unsent
 * events on disk, and a batch is read back into memory only when its turn to be sent comes.
 */
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { uuidv7 } from '../uuidv7.js';
import { BatchBody, BodyWriter } from './batch-body.js';

export interface Batch {
  /** In memory; for a spooled batch, undefined until take(). */
  body: BatchBody | undefined;
  count: number;
  bytes: number;
  /** The spool file holding the batch, when spooling. */
  file?: string;
}

export interface QueueLimits {
  /** Most events held (memory mode) before appends are refused. */
  maxEvents: number;
  /** Most bytes held on disk (spool mode) before appends are refused. */
  maxSpoolBytes: number;
}

const OPEN = '.open';
const SEALED = '.ndjson';

export class EventQueue {
  private open: Batch = { body: undefined, count: 0, bytes: 0 };
  /** The open batch's lines (memory mode). */
  private readonly writer = new BodyWriter();
  private openFd: number | undefined;
  private readonly sealed: Batch[] = [];
  private held = 0;
  private heldBytes = 0;

  constructor(private readonly limits: QueueLimits, private readonly spoolDir?: string) {
    if (spoolDir !== undefined) this.adoptSpool(spoolDir);
  }

  /** Events appended and not yet removed (sealed, open, and taken for sending). */
  get pending(): number {
    return this.held;
  }

  get openCount(): number {
    return this.open.count;
  }

  get openBytes(): number {
    return this.open.bytes;
  }

  /** Adds one line to the open batch; false when the queue is full (the caller counts the drop). */
  append(line: string): boolean {
    let size: number;
    if (this.spoolDir === undefined) {
      if (this.held >= this.limits.maxEvents) return false;
      size = this.writer.add(line) + 1;
    } else {
      size = Buffer.byteLength(line) + 1;
      if (this.heldBytes + size > this.limits.maxSpoolBytes) return false;
      if (this.openFd === undefined) {
        this.open.file = join(this.spoolDir, `${uuidv7()}${OPEN}`);
        this.openFd = openSync(this.open.file, 'a');
      }
      writeSync(this.openFd, line + '\n');
    }
    this.open.count++;
    this.open.bytes += size;
    this.held++;
    this.heldBytes += size;
    return true;
  }

  /** Closes the open batch (if it has events) and puts it in line to be sent. */
  seal(): void {
    if (this.open.count === 0) return;
    const batch = this.open;
    if (this.openFd !== undefined) {
      closeSync(this.openFd);
      this.openFd = undefined;
      const sealedName = batch.file!.slice(0, -OPEN.length) + SEALED;
      renameSync(batch.file!, sealedName);
      batch.file = sealedName; // read back when its turn comes
    } else batch.body = this.writer.finish();
    this.sealed.push(batch);
    this.open = { body: undefined, count: 0, bytes: 0 };
  }

  /** The oldest sealed batch, taken out of line, with its body loaded. */
  take(): Batch | undefined {
    const batch = this.sealed.shift();
    if (batch === undefined) return undefined;
    batch.body ??= BatchBody.of(readLines(batch.file!));
    return batch;
  }

  get sealedCount(): number {
    return this.sealed.length;
  }

  /** Puts a taken batch back at the head of the line (its send was abandoned, e.g. by close()). */
  putBack(batch: Batch): void {
    this.sealed.unshift(batch);
  }

  /** The server answered for this batch: forget it, on disk too. */
  done(batch: Batch): void {
    this.held -= batch.count;
    this.heldBytes -= batch.bytes;
    if (batch.file !== undefined) unlinkSync(batch.file);
  }

  /** Stops writing to the spool; what is on disk stays for the next process using the directory. */
  closeSpool(): void {
    if (this.openFd !== undefined) this.seal();
  }

  /** Batches a previous process left in the spool (sealed or still open when it died) go first. */
  private adoptSpool(dir: string): void {
    mkdirSync(dir, { recursive: true });
    for (const name of readdirSync(dir).sort()) {
      if (!name.endsWith(SEALED) && !name.endsWith(OPEN)) continue;
      const file = join(dir, name);
      const lines = readLines(file);
      if (lines.length === 0) {
        unlinkSync(file);
        continue;
      }
      const bytes = statSync(file).size;
      this.sealed.push({ body: undefined, count: lines.length, bytes, file });
      this.held += lines.length;
      this.heldBytes += bytes;
    }
  }
}

/** The complete lines of a spool file; a last line cut short by a crash mid-write is left out. */
function readLines(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  lines.pop(); // after the last newline: empty, or a line the crash cut short
  return lines.filter((line) => line.length > 0);
}
