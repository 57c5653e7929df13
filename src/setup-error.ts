/**
 * An operator's mistake found while setting up (a data dir that is a file, a port in use, a missing
 * TLS file...): the CLI prints its message as one line and exits non-zero, never a stack.
 */
import { StoreUnavailableError } from './store/types.js';

export class SetupError extends Error {
  override readonly name = 'SetupError';
}

/** System error codes that describe the machine's state, not a bug: their message is the sentence. */
const OPERATIONAL = new Set(['EADDRINUSE', 'EADDRNOTAVAIL', 'EACCES', 'EPERM', 'EROFS', 'ENOENT', 'ENOTDIR', 'EISDIR', 'ENOSPC', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNREFUSED']);

/** The one line an operational error is, or undefined when it looks like a bug (whose stack helps). */
export function setupMessage(error: unknown): string | undefined {
  if (error instanceof SetupError) return error.message;
  // The database is unreachable or refuses: the machine's state, said in the error's own sentence.
  if (error instanceof StoreUnavailableError) return error.message;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  if (OPERATIONAL.has(code) || code.startsWith('SQLITE_')) return `${(error as Error).message} (${code})`;
  return undefined;
}
