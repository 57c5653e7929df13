/** Starts the real `bin/bucketmeter` in a child process, as users run it, and talks to it over HTTP. */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { checkReply } from './openapi.js';
import { tempDir } from './scratch.js';

export { tempDir };

export const ROOT = resolve(import.meta.dirname, '../../..');
export const BIN = join(ROOT, 'bin/bucketmeter');

export interface ServerProcess {
  url: string;
  port: number;
  /** The key printed on first start, when the store had none. */
  bootstrapKey: string | undefined;
  child: ChildProcess;
  /** Everything the process wrote, stdout and stderr. */
  output(): string;
  /** SIGTERM and wait for exit; resolves the exit code. With `killAfterMs`, SIGKILL if still running by then. */
  stop(killAfterMs?: number): Promise<number | null>;
  /** SIGKILL and wait for the process to be gone. */
  kill(): Promise<void>;
}

export interface StartOptions {
  dataDir?: string;
  args?: string[];
  env?: Record<string, string | undefined>;
  /** Defaults to http. */
  protocol?: 'http' | 'https';
  /** Start it as `npm start -- <args>` from the project folder (a container's command), not bin/bucketmeter. */
  npmStart?: boolean;
}

export async function startServer(options: StartOptions = {}): Promise<ServerProcess> {
  const args = ['serve', '--port', '0', '--host', '127.0.0.1', ...(options.args ?? [])];
  if (options.dataDir !== undefined) args.push('--data-dir', options.dataDir);
  // The store is chosen by the test's flags only, never by a DATABASE_URL that happens to be set.
  const env: Record<string, string | undefined> = { ...process.env, DATABASE_URL: undefined, LOG_LEVEL: 'info', ...options.env };
  const child = options.npmStart
    ? spawn('npm', ['start', '--silent', '--', ...args.slice(1)], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let bootstrapKey: string | undefined;
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const port = await new Promise<number>((ready, fail) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      bootstrapKey ??= /^\s+([A-Za-z0-9]{8}\.[A-Za-z0-9+/]{48})\s*$/m.exec(output)?.[1];
      const listening = /"port":(\d+)[^\n]*"msg":"bucketmeter listening"/.exec(output);
      if (listening) ready(Number(listening[1]));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    void exited.then((code) => fail(new Error(`server exited (${code}) before listening:\n${output}`)));
    setTimeout(() => fail(new Error(`server did not start in 20 s:\n${output}`)), 20_000).unref();
  }).catch(async (error: unknown) => {
    // A server that never came up must not outlive the test that started it.
    child.kill('SIGKILL');
    await exited;
    throw error;
  });
  const protocol = options.protocol ?? 'http';
  return {
    url: `${protocol}://127.0.0.1:${port}`,
    port,
    bootstrapKey,
    child,
    output: () => output,
    stop: async (killAfterMs?: number) => {
      child.kill('SIGTERM');
      if (killAfterMs === undefined) return exited;
      const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, DATABASE_URL: undefined, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => done({ code, stdout, stderr }));
  });
}

/** Creates a key for `tenant` with the CLI and returns it. */
export async function createKey(tenant: string, storeArgs: string[]): Promise<string> {
  // --init: a test may create its tenants before the server's first start.
  const result = await runCli(['keys', 'create', '--init', '--tenant', tenant, ...storeArgs]);
  if (result.code !== 0) throw new Error(`keys create failed: ${result.stderr}`);
  return result.stdout.trim();
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read replies field by field and assert on them.
  json: any;
}

/** One HTTP request; the reply's body read whole, parsed when it is JSON, and checked against the OpenAPI document. */
export async function request(url: string, init: { method?: string; key?: string; body?: unknown; raw?: Buffer | string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const headers: Record<string, string> = { 'user-agent': 'bucketmeter-tests', ...(init.key ? { 'x-api-key': init.key } : {}), ...init.headers };
  let body: Buffer | string | undefined = init.raw;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const method = init.method ?? (body === undefined ? 'GET' : 'POST');
  const response = await fetch(url, { method, headers, ...(body === undefined ? {} : { body: body as BodyInit }) });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const reply = { status: response.status, headers: response.headers, text, json };
  checkReply(ROOT, method, url, reply);
  return reply;
}
