/** What a thread doing background work beside request handling (a SQLite reader, the cost thread) runs first. */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/** Nice value of background threads: above the main thread's 0, so that requests get a busy core first. */
const BACKGROUND_NICE = 19;

/**
 * On Linux, where a thread has its own nice value (set through its thread id), this thread yields a
 * contended core to the threads that answer requests and commit. Elsewhere it runs at the process's
 * priority.
 */
export function lowerThreadPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, BACKGROUND_NICE);
  } catch {
    // Not Linux, or not allowed: same priority as the rest.
  }
}
