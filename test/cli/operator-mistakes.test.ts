/**
 * Operators' mistakes, each made with the real command: one clear line on stderr, a non-zero exit,
 * never a stack, and nothing created or printed before the mistake is found.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { SETTINGS } from '../../src/config.js';
import { BIN, ROOT, runCli, startServer, tempDir } from '../support/server.js';
import type { CliResult } from '../support/server.js';

/** The mistake's line, checked to be the only one, stack-free and naming `mentions`. */
function assertOneLine(result: CliResult, mentions: RegExp): void {
  assert.notEqual(result.code, 0, 'a mistake exits non-zero');
  assert.equal(result.stdout, '', 'nothing printed on stdout (no key, no listing)');
  const lines = result.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line: ${result.stderr}`);
  assert.match(lines[0]!, /^bucketmeter: /);
  assert.match(lines[0]!, mentions);
  assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack');
}

function runIn(cwd: string, args: string[]): Promise<CliResult> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, DATABASE_URL: undefined, BUCKETMETER_DATA_DIR: undefined }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => done({ code, stdout, stderr }));
  });
}

const serve = (dataDir: string, ...args: string[]) => runCli(['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, ...args]);

describe('operator mistakes, serve', () => {
  it('--port 70000: refused before the database is created or a key printed', async () => {
    const dataDir = join(tempDir(), 'data');
    const result = await serve(dataDir, '--port', '70000');
    assertOneLineOrConfig(result, /--port.*0 to 65535.*70000/);
    assert.ok(!existsSync(dataDir), 'no data dir created');
  });

  it('a data dir that is a file', async () => {
    const file = join(tempDir(), 'not-a-dir');
    writeFileSync(file, 'x');
    assertOneLine(await serve(file), /--data-dir .*not-a-dir is a file, not a folder/);
  });

  it('a read-only data dir', async (t) => {
    const dir = tempDir();
    if (process.getuid?.() === 0) {
      // Root writes through permission bits: only a read-only mount refuses it.
      try {
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', dir]);
      } catch {
        t.skip('as root, a read-only mount is needed and mount failed');
        return;
      }
      after(() => execFileSync('umount', [dir]));
    } else {
      execFileSync('chmod', ['0500', dir]);
    }
    assertOneLine(await serve(dir), /--data-dir .* is not writable \((EROFS|EACCES)\)/);
  });

  it('a port in use', async () => {
    const holder: Server = createServer();
    await new Promise<void>((done) => holder.listen(0, '127.0.0.1', () => done()));
    after(() => holder.close());
    const port = (holder.address() as { port: number }).port;
    const dataDir = join(tempDir(), 'data');
    const result = await runCli(['serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir]);
    assertOneLine(result, new RegExp(`--port ${port} on 127\\.0\\.0\\.1 is in use`));
    assert.ok(!existsSync(dataDir), 'no data dir created');
  });

  it('a missing TLS file', async () => {
    const dir = tempDir();
    assertOneLine(await serve(join(dir, 'data'), '--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem')), /--tls-cert .*cert\.pem cannot be read \(ENOENT\)/);
  });

  it('a TLS file that is not PEM', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'cert.pem'), 'not a certificate');
    writeFileSync(join(dir, 'key.pem'), 'not a key');
    assertOneLine(await serve(join(dir, 'data'), '--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem')), /not a PEM certificate and its private key/);
  });

  it('a bad host: not a name, or a name that does not resolve', async () => {
    assertOneLineOrConfig(await serve(join(tempDir(), 'data'), '--host', 'bad host!'), /--host.*expected an IP address or a host name/);
    const unresolved = await runCli(['serve', '--host', 'no-such-host.invalid', '--port', '0', '--data-dir', join(tempDir(), 'data')]);
    assertOneLine(unresolved, /--host no-such-host\.invalid does not resolve/);
  });

  it('a database that cannot be reached', async () => {
    // Port 1 on loopback: nothing listens there.
    assertOneLine(await runCli(['keys', 'list', '--database-url', 'postgres://postgres@127.0.0.1:1/none']), /ECONNREFUSED/);
  });

  it('an unknown flag or command', async () => {
    assertOneLine(await runCli(['serve', '--prot', '8080']), /--prot/);
    assertOneLine(await runCli(['sevre']), /unknown command "sevre"/);
  });
});

/** A configuration error may list several settings, one line each; here only one is wrong. */
function assertOneLineOrConfig(result: CliResult, mentions: RegExp): void {
  assert.equal(result.code, 2);
  assert.equal(result.stdout, '');
  assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack');
  const lines = result.stderr.trimEnd().split('\n');
  assert.deepEqual(lines.length, 2, result.stderr);
  assert.equal(lines[0], 'bucketmeter: invalid configuration:');
  assert.match(lines[1]!, mentions);
}

describe('commands other than serve never create a database', () => {
  for (const args of [['keys', 'list'], ['keys', 'create', '--tenant', 'acme'], ['quarantine', 'list'], ['quarantine', 'export'], ['quarantine', 'replay']]) {
    it(`${args.join(' ')} in a folder without one names the path it looked at`, async () => {
      const cwd = tempDir();
      const result = await runIn(cwd, args);
      assertOneLine(result, new RegExp(`no database at ${join(cwd, 'data', 'bucketmeter.db').replace(/[.]/g, '\\.')}`));
      assert.ok(!existsSync(join(cwd, 'data')), './data not created');
    });
  }

  it('keys create --init creates it (for setting up tenants before the first start)', async () => {
    const cwd = tempDir();
    const result = await runIn(cwd, ['keys', 'create', '--init', '--tenant', 'acme']);
    assert.equal(result.code, 0, result.stderr);
    assert.ok(existsSync(join(cwd, 'data', 'bucketmeter.db')));
  });
});

describe('tenant names', () => {
  for (const name of [' acme', 'acme ', 'Acme', 'ac\u001bme', 'acme\u200b', '', '-acme', 'a'.repeat(65)]) {
    it(`keys create --tenant ${JSON.stringify(name)} is refused, saying the rule`, async () => {
      const dataDir = tempDir();
      const result = await runCli(['keys', 'create', '--init', `--tenant=${name}`, '--data-dir', dataDir]);
      assertOneLine(result, /tenant name .* is not valid: expected 1-64 characters of a-z, 0-9, "\.", "_" and "-", starting with a letter or digit/);
      assert.ok(!existsSync(join(dataDir, 'bucketmeter.db')), 'nothing created');
    });
  }

  it('valid names are accepted', async () => {
    const dataDir = tempDir();
    for (const name of ['acme', 'a', 'acme-2.eu_west', 'a'.repeat(64)]) {
      const result = await runCli(['keys', 'create', '--init', '--tenant', name, '--data-dir', dataDir]);
      assert.equal(result.code, 0, result.stderr);
    }
  });
});

describe('--help and --version', () => {
  it('--version prints the package version', async () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const result = await runCli(['--version']);
    assert.equal(result.code, 0);
    assert.equal(result.stdout, `bucketmeter ${version}\n`);
  });

  it('serve --help lists every setting with its default and environment variable', async () => {
    const result = await runCli(['serve', '--help']);
    assert.equal(result.code, 0);
    for (const s of Object.values(SETTINGS)) {
      const line = result.stdout.split('\n').find((l) => l.trimStart().startsWith(`--${s.flag}`));
      assert.ok(line, `--${s.flag} listed`);
      assert.ok(line.includes(`default ${s.default === undefined ? 'none' : String(s.default)}`), line);
      assert.ok(line.includes(`env ${s.env}`), line);
    }
  });

  it('each command has its own help', async () => {
    const create = await runCli(['keys', 'create', '--help']);
    assert.match(create.stdout, /^usage: bucketmeter keys create --tenant NAME/);
    assert.match(create.stdout, /--init/);
    assert.match(create.stdout, /--data-dir VALUE .*default \.\/data/);
    assert.doesNotMatch(create.stdout, /--port/, 'only the flags this command reads');
    const list = await runCli(['quarantine', 'list', '--help']);
    assert.match(list.stdout, /--limit N +most entries shown \(default 100\)/);
    assert.match(list.stdout, /--oldest-first/);
    const group = await runCli(['quarantine', '--help']);
    for (const sub of ['list', 'show', 'export', 'replay']) assert.match(group.stdout, new RegExp(`usage: bucketmeter quarantine ${sub}`));
  });
});

describe('files the server creates', () => {
  it('data dir 0700, database, derived file and their WAL 0600', async () => {
    const parent = tempDir();
    const dataDir = join(parent, 'new', 'data');
    const server = await startServer({ dataDir });
    try {
      const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
      assert.equal(mode(dataDir), '700');
      assert.equal(mode(join(parent, 'new')), '700');
      assert.equal(mode(join(dataDir, 'bucketmeter.db')), '600');
      assert.equal(mode(join(dataDir, 'bucketmeter.db-wal')), '600');
      assert.equal(mode(join(dataDir, 'bucketmeter.db.derived')), '600');
      assert.equal(mode(join(dataDir, 'bucketmeter.db.derived-wal')), '600');
    } finally {
      await server.stop();
    }
  });
});
