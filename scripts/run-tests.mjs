// Runs every compiled test file under dist/test with node's test runner.
// `npm test` runs the default suite (the server's and packages/client's); `node scripts/run-tests.mjs
// reliability` runs the long one, `... ui` the dashboard's browser tests.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const suite = process.argv[2] ?? 'default';
const roots = suite === 'default' ? ['dist/test', 'packages/client/dist/test'] : [`dist/test-${suite}`];

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return find(path);
    return name.endsWith('.test.js') ? [path] : [];
  });
}

const files = roots.flatMap(find).sort();
if (!process.env.TEST_DATABASE_URL) {
  console.warn('\n*** TEST_DATABASE_URL is not set: the PostgreSQL suites are SKIPPED (SQLite suites still run). ***\n');
}
// The default suite runs four files at once: most of a test's time is spent waiting on the servers
// and commands it starts, and node's default (one file less than the cores: one at a time on two
// cores) leaves the machine idle for much of the run. The long suites measure rates, latencies and
// memory: they keep node's default. A --test-concurrency given on the command line wins.
const extra = process.argv.slice(3);
const concurrency = suite !== 'default' || extra.some((arg) => arg.startsWith('--test-concurrency')) ? [] : ['--test-concurrency=4'];
// Every file's process loads the fast-check settings first (test/support/fast-check-setup.ts).
const setup = ['--import', new URL('../dist/test/support/fast-check-setup.js', import.meta.url).href];
const result = spawnSync(process.execPath, [...setup, '--test', ...concurrency, ...extra, ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
