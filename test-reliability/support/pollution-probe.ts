/**
 * Loaded into a server under test with `node --import` (see probeEnv): on SIGUSR2 it prints what a
 * fresh object inherits, so a test can tell whether any request polluted a built-in prototype.
 */
import { pathToFileURL } from 'node:url';
import { isMainThread } from 'node:worker_threads';

export const PROBE_LINE = 'POLLUTION-PROBE ';

/** Environment that loads this module into a server started with startServer. */
export function probeEnv(): Record<string, string> {
  return { NODE_OPTIONS: `--import=${pathToFileURL(import.meta.filename).href}` };
}

export interface PrototypeSnapshot {
  /** Own property names of the built-in prototypes every parsed value inherits from. */
  own: Record<string, string[]>;
  /** Enumerable names a fresh object, array and function see through for-in (none when clean). */
  inherited: string[];
}

function snapshot(): PrototypeSnapshot {
  const prototypes: Record<string, object> = { Object: Object.prototype, Array: Array.prototype, Function: Function.prototype, String: String.prototype, Number: Number.prototype };
  const own = Object.fromEntries(Object.entries(prototypes).map(([name, proto]) => [name, Reflect.ownKeys(proto).map(String).sort()]));
  const inherited: string[] = [];
  for (const value of [{}, [], () => undefined]) {
    for (const name in value) inherited.push(name);
  }
  return { own, inherited };
}

// Only when preloaded into a server: a test importing this module for probeEnv must not be affected.
if (isMainThread && process.argv[1]?.endsWith('bucketmeter') === true) {
  process.on('SIGUSR2', () => process.stdout.write(`${PROBE_LINE}${JSON.stringify(snapshot())}\n`));
}
