/**
 * The sender's queue: events as JSON lines, grouped into batches. The open batch takes appends;
 * sealed batches wait, oldest first, to be sent. In memory by default; with a spool directory every
 * line is also written to a file as it is appended (one file per batch), so a process that dies
 * leaves its unsent events on disk, and a sealed batch's lines leave memory until it is sent.
 */
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { uuidv7 } from '../uuidv7.js';

export interface Batch {
  /** In memory; for a spooled batch, undefined until load(). */
  lines: string[] | undefined;
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
  private open: Batch = { lines: [], count: 0, bytes: 0 };
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
    const size = Buffer.byteLength(line) + 1;
    if (this.spoolDir === undefined ? this.held >= this.limits.maxEvents : this.heldBytes + size > this.limits.maxSpoolBytes) return false;
    if (this.spoolDir !== undefined) {
      if (this.openFd === undefined) {
        this.open.file = join(this.spoolDir, `${uuidv7()}${OPEN}`);
        this.openFd = openSync(this.open.file, 'a');
      }
      writeSync(this.openFd, line + '\n');
    }
    this.open.lines!.push(line);
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
      batch.file = sealedName;
      batch.lines = undefined; // on disk now; read back when its turn comes
    }
    this.sealed.push(batch);
    this.open = { lines: [], count: 0, bytes: 0 };
  }

  /** The oldest sealed batch, taken out of line, with its lines loaded. */
  take(): Batch | undefined {
    const batch = this.sealed.shift();
    if (batch === undefined) return undefined;
    if (batch.lines === undefined) batch.lines = readLines(batch.file!);
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
      this.sealed.push({ lines: undefined, count: lines.length, bytes, file });
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
