/**
 * Socket level: a real S3-compatible server (s3rver) on loopback, the real S3Client, a real
 * BucketmeterClient and a real bucketmeter. Every call made lands in /v1/events with the right
 * fields. (s3rver covers the plain object path; versions, delete markers and the rest of the 39
 * kinds are covered by s3-commands.test.ts with a scripted handler.)
 */
import assert from 'node:assert/strict';
import { createReadStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as S3 from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { BucketmeterClient, instrumentS3, withAttribution } from '../src/index.js';
import type { MeterError } from '../src/index.js';
import { startServer, storedEvents, tempDir } from './support/bucketmeter.js';
import type { ServerProcess } from './support/bucketmeter.js';

describe('instrumentS3 over real sockets: s3rver → S3Client → bucketmeter', () => {
  let s3rver: S3rver;
  let endpoint: string;
  let server: ServerProcess;

  before(async () => {
    s3rver = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: tempDir('bm-s3rver-') });
    const { port } = await s3rver.run();
    endpoint = `http://127.0.0.1:${port}`;
    server = await startServer({ dataDir: tempDir('bm-client-s3rver-') });
  });
  after(async () => {
    await s3rver.close();
    await server.stop();
  });

  it('every call made is stored with the right fields', async () => {
    const errors: MeterError[] = [];
    const meter = new BucketmeterClient({ url: server.url, apiKey: server.bootstrapKey, exitHooks: false, onError: (e) => errors.push(e) });
    const s3 = new S3.S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      // s3rver does not decode aws-chunked bodies.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    instrumentS3(s3, meter, { defaultAttribution: { customerId: 'cus_7' } });
    const file = join(tempDir('bm-body-'), 'body.txt');
    writeFileSync(file, 'twenty-two bytes, too.');
    const bucket = 'media';
    const big = Buffer.alloc(5 * 1024 * 1024, 7);
    const started = Date.now();
    const steps: [string, () => Promise<unknown>, Record<string, unknown>][] = [
      ['create', () => s3.send(new S3.CreateBucketCommand({ Bucket: bucket })), { action: 'CreateBucket', bucket }],
      ['head-bucket', () => s3.send(new S3.HeadBucketCommand({ Bucket: bucket })), { action: 'HeadBucket', bucket }],
      ['list-buckets', () => s3.send(new S3.ListBucketsCommand({})), { action: 'ListBuckets' }],
      ['put-string', () => s3.send(new S3.PutObjectCommand({ Bucket: bucket, Key: 'docs/a.txt', Body: 'hello world' })), { action: 'PutObject', bucket, objectKey: 'docs/a.txt', bytes: 11 }],
      ['put-stream', () => s3.send(new S3.PutObjectCommand({ Bucket: bucket, Key: 'docs/b.txt', Body: createReadStream(file) })), { action: 'PutObject', bucket, objectKey: 'docs/b.txt', bytes: 22 }],
      [
        'get-range',
        async () => (await s3.send(new S3.GetObjectCommand({ Bucket: bucket, Key: 'docs/a.txt', Range: 'bytes=0-3' }))).Body!.transformToString(),
        { action: 'GetObject', bucket, objectKey: 'docs/a.txt', bytes: 4, isBillableEgress: true },
      ],
      [
        'get-whole',
        async () => (await s3.send(new S3.GetObjectCommand({ Bucket: bucket, Key: 'docs/b.txt' }))).Body!.transformToString(),
        { action: 'GetObject', bucket, objectKey: 'docs/b.txt', bytes: 22, isBillableEgress: true },
      ],
      ['head-object', () => s3.send(new S3.HeadObjectCommand({ Bucket: bucket, Key: 'docs/a.txt' })), { action: 'HeadObject', bucket, objectKey: 'docs/a.txt' }],
      [
        'copy', () => s3.send(new S3.CopyObjectCommand({ Bucket: bucket, Key: 'docs/c.txt', CopySource: `${bucket}/docs/a.txt` })),
        { action: 'CopyObject', bucket, objectKey: 'docs/c.txt', copySource: { bucket, objectKey: 'docs/a.txt' } },
      ],
      ['list-v2', () => s3.send(new S3.ListObjectsV2Command({ Bucket: bucket, Prefix: 'docs/' })), { action: 'ListObjectsV2', bucket, objectKeyPrefix: 'docs/' }],
      ['list-v1', () => s3.send(new S3.ListObjectsCommand({ Bucket: bucket })), { action: 'ListObjects', bucket }],
      ['cors-put', () => s3.send(new S3.PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [{ AllowedMethods: ['GET'], AllowedOrigins: ['*'] }] } })), { action: 'PutBucketCors', bucket }],
      ['cors-get', () => s3.send(new S3.GetBucketCorsCommand({ Bucket: bucket })), { action: 'GetBucketCors', bucket }],
      ['cors-delete', () => s3.send(new S3.DeleteBucketCorsCommand({ Bucket: bucket })), { action: 'DeleteBucketCors', bucket }],
      ['location', () => s3.send(new S3.GetBucketLocationCommand({ Bucket: bucket })), { action: 'GetBucketLocation', bucket }],
      ['object-acl', () => s3.send(new S3.GetObjectAclCommand({ Bucket: bucket, Key: 'docs/a.txt' })), { action: 'GetObjectAcl', bucket, objectKey: 'docs/a.txt' }],
      ['delete-one', () => s3.send(new S3.DeleteObjectCommand({ Bucket: bucket, Key: 'docs/c.txt' })), { action: 'DeleteObject', bucket, objectKey: 'docs/c.txt' }],
      [
        'delete-many', () => s3.send(new S3.DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: 'docs/a.txt' }, { Key: 'docs/b.txt' }] } })),
        { action: 'DeleteObjects', bucket, objectKeyPrefix: 'docs/', deletedObjects: [{ objectKey: 'docs/a.txt' }, { objectKey: 'docs/b.txt' }] },
      ],
    ];
    for (const [name, call] of steps) await withAttribution({ clientId: name }, call);

    // Multipart, the upload id coming from the real server.
    const created = await withAttribution({ clientId: 'mpu-create' }, () => s3.send(new S3.CreateMultipartUploadCommand({ Bucket: bucket, Key: 'big.bin' })));
    const uploadId = created.UploadId!;
    const p1 = await withAttribution({ clientId: 'mpu-part-1' }, () => s3.send(new S3.UploadPartCommand({ Bucket: bucket, Key: 'big.bin', UploadId: uploadId, PartNumber: 1, Body: big })));
    const p2 = await withAttribution({ clientId: 'mpu-part-2' }, () => s3.send(new S3.UploadPartCommand({ Bucket: bucket, Key: 'big.bin', UploadId: uploadId, PartNumber: 2, Body: 'tail' })));
    await withAttribution({ clientId: 'mpu-complete' }, () =>
      s3.send(new S3.CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'big.bin', UploadId: uploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag! }, { PartNumber: 2, ETag: p2.ETag! }] } })),
    );
    await withAttribution({ clientId: 'mpu-delete' }, () => s3.send(new S3.DeleteObjectCommand({ Bucket: bucket, Key: 'big.bin' })));
    await withAttribution({ clientId: 'delete-bucket' }, () => s3.send(new S3.DeleteBucketCommand({ Bucket: bucket })));
    // A call that fails emits nothing.
    await assert.rejects(withAttribution({ clientId: 'failed' }, () => s3.send(new S3.HeadObjectCommand({ Bucket: 'nope-bucket', Key: 'x' }))));
    const expected = new Map<string, Record<string, unknown>>(steps.map(([name, , fields]) => [name, fields]));
    expected.set('mpu-create', { action: 'CreateMultipartUpload', bucket, objectKey: 'big.bin', uploadId });
    expected.set('mpu-part-1', { action: 'UploadPart', bucket, objectKey: 'big.bin', uploadId, partNumber: 1, bytes: big.length });
    expected.set('mpu-part-2', { action: 'UploadPart', bucket, objectKey: 'big.bin', uploadId, partNumber: 2, bytes: 4 });
    expected.set('mpu-complete', { action: 'CompleteMultipartUpload', bucket, objectKey: 'big.bin', uploadId });
    expected.set('mpu-delete', { action: 'DeleteObject', bucket, objectKey: 'big.bin' });
    expected.set('delete-bucket', { action: 'DeleteBucket', bucket });

    const stats = await meter.close();
    assert.deepEqual(errors, []);
    assert.deepEqual(stats, { queued: 0, sent: expected.size, duplicates: 0, retried: 0, rejected: 0, dropped: 0 });
    const [stored] = await storedEvents(server.url, server.bootstrapKey!);
    const byStep = new Map([...stored.values()].map((e) => [String(e.clientId), e]));
    assert.deepEqual([...byStep.keys()].sort(), [...expected.keys()].sort());
    for (const [name, fields] of expected) {
      const { eventId, receivedAt, timestamp, ...rest } = byStep.get(name)!;
      void eventId;
      void receivedAt;
      // The timestamp is s3rver's Date header: whole seconds, during this test.
      const at = Date.parse(String(timestamp));
      assert.ok(at >= Math.floor(started / 1000) * 1000 && at <= Date.now(), `${name}: timestamp ${String(timestamp)}`);
      assert.deepEqual(rest, { provider: 'other', customerId: 'cus_7', clientId: name, ...fields }, name);
    }
  });
});
