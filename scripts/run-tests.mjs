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
const result = spawnSync(process.execPath, ['--test', ...process.argv.slice(3), ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
