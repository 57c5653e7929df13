import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { uuidv7 } from '../src/uuidv7.js';
import { parseCopySource, rangeLength } from '../src/s3/copy-source.js';
import { awsRegionOfHost, providerOfHost } from '../src/s3/provider.js';
import { isRetryable, retryAfterMs, retryDelayMs } from '../src/sender/backoff.js';
import { BatchBody, BodyWriter } from '../src/sender/batch-body.js';
import { EventQueue } from '../src/sender/queue.js';
import { tempDir } from './support/bucketmeter.js';

describe('uuidv7', () => {
  it('is a version-7, variant-10 UUID carrying the millisecond', () => {
    const id = uuidv7(Date.UTC(2026, 0, 2, 3, 4, 5, 6));
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(parseInt(id.slice(0, 8) + id.slice(9, 13), 16), Date.UTC(2026, 0, 2, 3, 4, 5, 6));
  });

  it('sorts in creation order, within one millisecond and across a clock step back; never repeats', () => {
    const now = Date.UTC(2027, 5, 1);
    const ids = [...Array.from({ length: 6000 }, () => uuidv7(now)), uuidv7(now - 1000), uuidv7(now + 5000)];
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
  });
});

describe('copy source', () => {
  it('parses bucket/key, a leading slash, ?versionId=, URL-encoding and access-point ARNs', () => {
    assert.deepEqual(parseCopySource('b/k'), { bucket: 'b', objectKey: 'k' });
    assert.deepEqual(parseCopySource('/b/dir%2Fa%20b%C3%A9.txt?versionId=v%2B1'), { bucket: 'b', objectKey: 'dir/a bé.txt', versionId: 'v+1' });
    assert.deepEqual(parseCopySource('arn:aws:s3:us-west-2:123456789012:accesspoint/my-ap/object/a/b.txt?versionId=x'), { bucket: 'my-ap', objectKey: 'a/b.txt', versionId: 'x' });
    assert.deepEqual(parseCopySource('b/100%'), { bucket: 'b', objectKey: '100%' });
    assert.equal(parseCopySource('no-key'), undefined);
    assert.equal(parseCopySource('b/'), undefined);
    assert.equal(parseCopySource(undefined), undefined);
  });

  it('reads the length of a byte range', () => {
    assert.equal(rangeLength('bytes=0-99'), 100);
    assert.equal(rangeLength('bytes=5-5'), 1);
    assert.equal(rangeLength('bytes=5-'), undefined);
  });
});

describe('provider from host', () => {
  it('names the providers by host suffix, and AWS regions', () => {
    assert.equal(providerOfHost('media.s3.eu-west-1.amazonaws.com'), 'aws');
    assert.equal(providerOfHost('s3.us-west-004.backblazeb2.com'), 'backblaze');
    assert.equal(providerOfHost('s3.eu-central-1.wasabisys.com'), 'wasabi');
    assert.equal(providerOfHost('abc.r2.cloudflarestorage.com'), 'cloudflare');
    assert.equal(providerOfHost('storage.googleapis.com'), 'gcp');
    assert.equal(providerOfHost('fra1.digitaloceanspaces.com'), 'digitalocean');
    assert.equal(providerOfHost('notamazonaws.com'), undefined);
    assert.equal(providerOfHost('127.0.0.1'), undefined);
    assert.equal(awsRegionOfHost('media.s3.eu-west-1.amazonaws.com'), 'eu-west-1');
    assert.equal(awsRegionOfHost('s3.amazonaws.com'), 'us-east-1');
    assert.equal(awsRegionOfHost('media.s3-us-west-2.amazonaws.com'), 'us-west-2');
    assert.equal(awsRegionOfHost('media.s3.dualstack.ap-south-1.amazonaws.com'), 'ap-south-1');
    assert.equal(awsRegionOfHost('s3.us-west-004.backblazeb2.com'), undefined);
  });
});

describe('backoff', () => {
  it('reads Retry-After as seconds or a date, and never waits less than it asks (up to the cap)', () => {
    const now = Date.UTC(2026, 0, 1);
    assert.equal(retryAfterMs('3', now), 3000);
    assert.equal(retryAfterMs(new Date(now + 7000).toUTCString(), now), 7000);
    assert.equal(retryAfterMs('soon', now), undefined);
    for (let attempt = 0; attempt < 20; attempt++) {
      const d = retryDelayMs(attempt, 30_000, '2', now);
      assert.ok(d >= 2000 && d <= 30_000, String(d));
      assert.ok(retryDelayMs(attempt, 30_000, '120', now) === 30_000);
      const free = retryDelayMs(attempt, 30_000, undefined, now);
      assert.ok(free >= 0 && free <= Math.min(30_000, 100 * 2 ** attempt));
    }
  });

  it('retries only what may succeed later', () => {
    assert.deepEqual([408, 429, 500, 502, 503, 504].map(isRetryable), [true, true, true, true, true, true]);
    assert.deepEqual([400, 401, 403, 413, 415, 501].map(isRetryable), [false, false, false, false, false, false]);
  });
});

describe('batch body', () => {
  const lines = ['{"a":1}', '{"k":"é/日本/😀"}', `{"long":"${'ü'.repeat(40_000)}"}`, '{"b":[1,2]}', '{}'];

  it('is the JSON array of its lines, UTF-8, and gives each line back', () => {
    const writer = new BodyWriter();
    // Past the writer's first 64 KiB (the long line alone is 80,000 bytes): it grows.
    assert.deepEqual(
      lines.map((line) => writer.add(line)),
      lines.map((line) => Buffer.byteLength(line)),
    );
    const body = writer.finish();
    assert.equal(body.json.toString('utf8'), `[${lines.join(',')}]`);
    assert.equal(body.count, lines.length);
    assert.deepEqual(
      lines.map((_, i) => body.line(i)),
      lines,
    );
    assert.deepEqual([body.line(-1), body.line(lines.length), body.line(1.5)], [undefined, undefined, undefined]);
    // The writer starts the next batch empty; the first batch is unchanged by it.
    writer.add('{"c":3}');
    assert.equal(writer.finish().json.toString(), '[{"c":3}]');
    assert.equal(body.json.toString('utf8'), `[${lines.join(',')}]`);
  });

  it('does not keep the room one very large event took for the batches after it', () => {
    const writer = new BodyWriter();
    const huge = `{"k":"${'x'.repeat(2_000_000)}"}`;
    writer.add(huge);
    assert.ok(writer.capacity >= huge.length);
    assert.equal(writer.finish().json.length, huge.length + 2);
    assert.ok(writer.capacity <= 1024 * 1024, String(writer.capacity));
    writer.add('{"a":1}');
    assert.equal(writer.finish().json.toString(), '[{"a":1}]');
  });

  it('splits into batches of their own (a 413), and is made from lines read back (a spool)', () => {
    const body = BatchBody.of(lines);
    assert.equal(body.json.toString('utf8'), `[${lines.join(',')}]`);
    const first = body.slice(0, 2);
    const second = body.slice(2, lines.length);
    assert.equal(first.json.toString('utf8'), `[${lines.slice(0, 2).join(',')}]`);
    assert.equal(second.json.toString('utf8'), `[${lines.slice(2).join(',')}]`);
    assert.deepEqual([first.count, second.count], [2, 3]);
    assert.deepEqual([second.line(0), second.line(2)], [lines[2], lines[4]]);
    assert.equal(second.slice(1, 2).json.toString(), '[{"b":[1,2]}]');
  });
});

describe('spool', () => {
  it('adopts what a dead process left, leaving out a last line cut short', () => {
    const dir = tempDir('bm-spool-unit-');
    writeFileSync(join(dir, '0001.ndjson'), '{"a":1}\n{"a":2}\n');
    writeFileSync(join(dir, '0002.open'), '{"a":3}\n{"a":');
    writeFileSync(join(dir, 'unrelated.txt'), 'x');
    const queue = new EventQueue({ maxEvents: 10, maxSpoolBytes: 1 << 20 }, dir);
    assert.equal(queue.pending, 3);
    const first = queue.take()!;
    assert.equal(first.body!.json.toString(), '[{"a":1},{"a":2}]');
    const second = queue.take()!;
    assert.equal(second.body!.json.toString(), '[{"a":3}]');
    queue.done(first);
    queue.done(second);
    assert.equal(queue.pending, 0);
  });

  it('refuses appends past its byte bound', () => {
    const queue = new EventQueue({ maxEvents: 10, maxSpoolBytes: 20 }, tempDir('bm-spool-unit-'));
    assert.equal(queue.append('0123456789'), true);
    assert.equal(queue.append('0123456789'), false);
  });
});
