/**
 * Everything `serve` can check before its first side effect (creating a database, printing a key,
 * opening a port): a mistake is reported as one line, and nothing has changed on disk.
 */
import { constants, accessSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { lookup } from 'node:dns/promises';
import { dirname, resolve } from 'node:path';
import { createSecureContext } from 'node:tls';
import type { Config } from '../config.js';
import { sqlitePath } from '../runtime.js';
import { SetupError } from '../setup-error.js';

export async function preflight(config: Config): Promise<void> {
  if (config.databaseUrl === undefined) checkDataDir(config);
  if (config.tlsCert !== undefined && config.tlsKey !== undefined) checkTls(config.tlsCert, config.tlsKey);
  const address = await resolveHost(config.host);
  if (config.port !== 0) await checkPortFree(address, config);
}

function checkDataDir(config: Config): void {
  const dir = resolve(config.dataDir);
  const stat = statOrUndefined(dir);
  if (stat !== undefined) {
    if (!stat.isDirectory()) throw new SetupError(`--data-dir ${dir} is a file, not a folder: give a folder (it is created if missing)`);
    writable(dir, `--data-dir ${dir} is not writable`);
    if (statOrUndefined(sqlitePath(config)) !== undefined) writable(sqlitePath(config), `the database ${sqlitePath(config)} is not writable`);
    return;
  }
  // Created on start: the nearest existing parent must be a folder we may write in.
  let parent = dirname(dir);
  while (statOrUndefined(parent) === undefined && dirname(parent) !== parent) parent = dirname(parent);
  if (!statOrUndefined(parent)?.isDirectory()) throw new SetupError(`--data-dir ${dir} cannot be created: ${parent} is not a folder`);
  writable(parent, `--data-dir ${dir} cannot be created: ${parent} is not writable`);
}

function statOrUndefined(path: string): ReturnType<typeof statSync> | undefined {
  try {
    return statSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function writable(path: string, message: string): void {
  try {
    accessSync(path, constants.W_OK);
  } catch (error) {
    throw new SetupError(`${message} (${(error as NodeJS.ErrnoException).code})`);
  }
}

function checkTls(certPath: string, keyPath: string): void {
  const read = (path: string, flag: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new SetupError(`${flag} ${path} cannot be read (${(error as NodeJS.ErrnoException).code})`);
    }
  };
  const cert = read(certPath, '--tls-cert');
  const key = read(keyPath, '--tls-key');
  try {
    createSecureContext({ cert, key });
  } catch (error) {
    throw new SetupError(`--tls-cert ${certPath} with --tls-key ${keyPath}: not a PEM certificate and its private key (${(error as Error).message})`);
  }
}

async function resolveHost(host: string): Promise<string> {
  try {
    return (await lookup(host)).address;
  } catch (error) {
    throw new SetupError(`--host ${host} does not resolve to an address (${(error as NodeJS.ErrnoException).code})`);
  }
}

/** Binds the port for a moment: in use, not allowed, or not an address of this machine, it says so now. */
function checkPortFree(address: string, config: Config): Promise<void> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => {
      const why =
        error.code === 'EADDRINUSE' ? 'is in use by another process'
        : error.code === 'EACCES' ? 'needs privileges this process lacks (ports below 1024)'
        : error.code === 'EADDRNOTAVAIL' ? `cannot be opened: ${config.host} is not an address of this machine`
        : `cannot be opened (${error.code})`;
      fail(new SetupError(`--port ${config.port} on ${config.host} ${why}`));
    });
    probe.listen({ port: config.port, host: address, exclusive: true }, () => probe.close(() => done()));
  });
}
