/** Price files: the shipped catalogue, --prices, --bucket-plans, and the CLI that shows them. */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/config.js';
import { ACTION_NAMES } from '../../src/events/catalogue.js';
import { bucketsByPlan, loadBucketPlans, planIdFor } from '../../src/pricing/assignment.js';
import { SHIPPED_PRICES_DIR, loadPriceBook, versionAt } from '../../src/pricing/catalogue.js';
import type { PricePlan } from '../../src/pricing/plan.js';
import { runCli, tempDir } from '../support/server.js';

const shipped = (file: string): PricePlan => JSON.parse(readFileSync(join(SHIPPED_PRICES_DIR, file), 'utf8')) as PricePlan;
const problemsOf = (run: () => unknown): string[] => {
  try {
    run();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  assert.fail('expected a ConfigError');
};
function dirWith(files: Record<string, unknown>): string {
  const dir = tempDir('bm-prices-');
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), JSON.stringify(content));
  return dir;
}

describe('price catalogue', () => {
  it('ships a default plan for the six providers, every kind mapped, versions in validFrom order', () => {
    const book = loadPriceBook();
    assert.deepEqual([...book.defaults.keys()].sort(), ['aws', 'backblaze', 'cloudflare', 'digitalocean', 'gcp', 'wasabi']);
    for (const versions of book.plans.values()) {
      for (const v of versions) for (const a of ACTION_NAMES) assert.ok(v.requests.actions[a] !== undefined, `${v.id} ${a}`);
    }
    assert.deepEqual(book.plans.get('backblaze-b2')!.map((v) => v.validFrom), [undefined, '2026-05-01']);
    assert.deepEqual(book.plans.get('wasabi-pay-as-you-go')!.map((v) => v.validFrom), [undefined, '2026-07-01']);
    const wasabi = book.plans.get('wasabi-pay-as-you-go')!;
    assert.equal(versionAt(wasabi, Date.UTC(2026, 5, 30, 23) / 1000)!.storage.tiers[0]!.pricePerGbMonth, '0.006826171875');
    assert.equal(versionAt(wasabi, Date.UTC(2026, 6, 1) / 1000)!.storage.tiers[0]!.pricePerGbMonth, '0.007802734375');
  });

  it('refuses a file missing a kind, naming the kind and the file', () => {
    const plan = shipped('aws-s3-standard-us-east-1.json');
    const { HeadBucket: _dropped, ...actions } = plan.requests.actions;
    const dir = dirWith({ 'broken.json': { ...plan, id: 'broken', requests: { ...plan.requests, actions } } });
    const problems = problemsOf(() => loadPriceBook(dir));
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /broken\.json: requests\.actions has no entry for HeadBucket/);
  });

  it('refuses unordered tiers, an unknown class, a float price and an unknown kind, all at once', () => {
    const plan = shipped('aws-s3-standard-us-east-1.json');
    const dir = dirWith({
      'tiers.json': { ...plan, id: 'tiers', egress: { ...plan.egress, tiers: [{ uptoGb: 500, pricePerGb: '0' }, { uptoGb: 100, pricePerGb: '0.09' }, { pricePerGb: '0.05' }] } },
      'class.json': { ...plan, id: 'class', requests: { ...plan.requests, actions: { ...plan.requests.actions, GetObject: 'tier9', Teleport: 'free' } } },
      'float.json': { ...plan, id: 'float', storage: { ...plan.storage, tiers: [{ pricePerGbMonth: 0.023 }] } },
    });
    const problems = problemsOf(() => loadPriceBook(dir)).join('\n');
    assert.match(problems, /tiers\.json: egress\.tiers\[1\]\.uptoGb 100 must be above the previous tier's 500/);
    assert.match(problems, /class\.json: requests\.actions\.GetObject names class "tier9"/);
    assert.match(problems, /class\.json: requests\.actions\.Teleport is not an event kind/);
    assert.match(problems, /float\.json: \/storage\/tiers\/0\/pricePerGbMonth must be string/);
  });

  it('--prices adds plans and versions, and replaces the one with the same id and validFrom', () => {
    const aws = shipped('aws-s3-standard-us-east-1.json');
    const dir = dirWith({
      'negotiated.json': { ...aws, storage: { ...aws.storage, tiers: [{ pricePerGbMonth: '0.019' }] } },
      'aws-2027.json': { ...aws, validFrom: '2027-01-01', default: false },
      'ia.json': { ...aws, id: 'aws-s3-ia', default: false, storage: { ...aws.storage, minimumDays: 30, minimumObjectBytes: 131072 } },
    });
    const book = loadPriceBook(dir);
    const versions = book.plans.get('aws-s3-standard-us-east-1')!;
    assert.deepEqual(versions.map((v) => [v.validFrom, v.storage.tiers[0]!.pricePerGbMonth]), [[undefined, '0.019'], ['2027-01-01', '0.023']]);
    assert.ok(book.plans.has('aws-s3-ia'));
    assert.equal(book.defaults.get('aws'), 'aws-s3-standard-us-east-1');
  });

  it('refuses versions of one plan that change the units a month is counted in', () => {
    const aws = shipped('aws-s3-standard-us-east-1.json');
    const dir = dirWith({ 'v2.json': { ...aws, validFrom: '2027-01-01', storage: { ...aws.storage, hoursPerMonth: 720 } } });
    assert.match(problemsOf(() => loadPriceBook(dir))[0]!, /plan aws-s3-standard-us-east-1 .*versions must share/);
  });

  it('--bucket-plans: bucket, then provider, then the shipped default; a provider with no plan is unpriced', () => {
    const aws = shipped('aws-s3-standard-us-east-1.json');
    const book = loadPriceBook(dirWith({ 'ia.json': { ...aws, id: 'aws-s3-ia', default: false } }));
    const file = join(tempDir(), 'plans.json');
    writeFileSync(file, JSON.stringify({ buckets: { archive: 'aws-s3-ia' }, providers: { backblaze: 'backblaze-b2' } }));
    const assignment = loadBucketPlans(file, book);
    assert.equal(planIdFor(book, assignment, 'aws', 'archive'), 'aws-s3-ia');
    assert.equal(planIdFor(book, assignment, 'aws', 'media'), 'aws-s3-standard-us-east-1');
    assert.equal(planIdFor(book, assignment, 'backblaze', 'media'), 'backblaze-b2');
    assert.equal(planIdFor(book, assignment, 'minio', 'media'), undefined);
    assert.deepEqual([...bucketsByPlan(book, assignment, 'aws', ['media', 'archive', 'logs'])], [['aws-s3-standard-us-east-1', ['media', 'logs']], ['aws-s3-ia', ['archive']]]);
    assert.deepEqual([...bucketsByPlan(book, assignment, 'minio', ['x'])], [[undefined, ['x']]]);
    writeFileSync(file, JSON.stringify({ buckets: { archive: 'nope' }, extra: 1 }));
    const problems = problemsOf(() => loadBucketPlans(file, book)).join('\n');
    assert.match(problems, /buckets\.archive names plan "nope", which no price file defines/);
    assert.match(problems, /unknown property "extra"/);
  });
});

describe('bucketmeter prices', () => {
  it('lists every version and shows one plan as JSON', async () => {
    const list = await runCli(['prices', 'list']);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^PLAN\s+PROVIDER\s+VALID FROM/);
    assert.match(list.stdout, /wasabi-pay-as-you-go\s+wasabi\s+2026-07-01\s+2026-10-15\s+daily-snapshot/);
    assert.equal(list.stdout.trim().split('\n').length, 1 + 8);
    const show = await runCli(['prices', 'show', 'cloudflare-r2-standard']);
    assert.equal(show.code, 0);
    assert.equal(JSON.parse(show.stdout)[0].storage.metering, 'daily-peak');
    const missing = await runCli(['prices', 'show', 'nope']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no price plan "nope"/);
  });

  it('serve refuses to start on a bad price file, naming it (BUCKETMETER_PRICES)', async () => {
    const plan = shipped('gcp-gcs-standard-us-east1.json');
    const { ListParts: _dropped, ...actions } = plan.requests.actions;
    const dir = dirWith({ 'gcs.json': { ...plan, requests: { ...plan.requests, actions } } });
    const result = await runCli(['serve', '--port', '0', '--data-dir', tempDir()], { BUCKETMETER_PRICES: dir });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /gcs\.json: requests\.actions has no entry for ListParts/);
  });
});
