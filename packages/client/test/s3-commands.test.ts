/**
 * Every S3 command of the catalogue, through a real S3Client with a scripted request handler, metered
 * by instrumentS3 into a real BucketmeterClient and a real bucketmeter: the stored event of each call
 * must be exactly the expected one. Each case runs under withAttribution({clientId: case name}), which
 * is how its stored event is found again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { mkdtempSync, writeFileSync, createReadStream } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import * as S3 from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { BucketmeterClient, instrumentS3, withAttribution } from '../src/index.js';
import type { MeterError } from '../src/index.js';
import { COMMANDS } from '../src/s3/commands.js';
import { startServer, storedEvents, tempDir } from './support/bucketmeter.js';
import type { ServerProcess } from './support/bucketmeter.js';
import { scriptedS3 } from './support/scripted-s3.js';
import type { ScriptedReply } from './support/scripted-s3.js';

const TS = '2026-11-23T18:48:53Z';
const xml = (root: string, inner = '') => `<?xml version="1.0" encoding="UTF-8"?><${root} xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${inner}</${root}>`;

interface Case {
  name: string;
  command: { constructor: { name: string } };
  reply?: ScriptedReply;
  /** The stored event's fields besides action, timestamp, provider, clientId; undefined: no event. */
  expect: Record<string, unknown> | undefined;
  provider?: string;
}

const uploadFile = join(mkdtempSync(join(tmpdir(), 'bm-client-')), 'body.bin');
writeFileSync(uploadFile, 'twenty-two bytes, too.');

function cases(): Case[] {
  const b = { Bucket: 'media' };
  const o = { Bucket: 'media', Key: 'a/b.jpg' };
  const bucketOnly = { bucket: 'media' };
  const objectOnly = { bucket: 'media', objectKey: 'a/b.jpg' };
  return [
    {
      name: 'ranged-get', command: new S3.GetObjectCommand({ ...o, Range: 'bytes=0-3' }),
      reply: { status: 206, headers: { 'content-range': 'bytes 0-3/11', 'x-amz-version-id': 'gv1' }, body: 'abcd' },
      // isBillableEgress: the server's default when the field is absent.
      expect: { ...objectOnly, versionId: 'gv1', bytes: 4, isBillableEgress: true },
    },
    { name: 'put-stream', command: new S3.PutObjectCommand({ ...o, Body: createReadStream(uploadFile) }), reply: { headers: { 'x-amz-version-id': 'pv1' } }, expect: { ...objectOnly, versionId: 'pv1', bytes: 22 } },
    {
      name: 'copy-versioned-encoded', command: new S3.CopyObjectCommand({ ...o, CopySource: 'src-bucket/dir%2Fa%20b%C3%A9.txt?versionId=sv1' }),
      reply: { headers: { 'x-amz-version-id': 'dv1', 'x-amz-copy-source-version-id': 'sv1' }, body: xml('CopyObjectResult', '<ETag>"e"</ETag>') },
      expect: { ...objectOnly, versionId: 'dv1', copySource: { bucket: 'src-bucket', objectKey: 'dir/a bé.txt', versionId: 'sv1' } },
    },
    {
      name: 'delete-version', command: new S3.DeleteObjectCommand({ ...o, VersionId: 'hv3' }),
      reply: { status: 204, headers: { 'x-amz-version-id': 'hv3' } }, expect: { ...objectOnly, hardDeletedVersionId: 'hv3' },
    },
    {
      name: 'delete-marker', command: new S3.DeleteObjectCommand(o),
      reply: { status: 204, headers: { 'x-amz-version-id': 'dm1', 'x-amz-delete-marker': 'true' } }, expect: { ...objectOnly, resultingDeleteMarkerVersionId: 'dm1' },
    },
    { name: 'delete-unversioned', command: new S3.DeleteObjectCommand(o), reply: { status: 204 }, expect: objectOnly },
    {
      name: 'delete-objects-errors',
      command: new S3.DeleteObjectsCommand({ ...b, Delete: { Objects: [{ Key: 'shared-prefix/k1' }, { Key: 'shared-prefix/k2', VersionId: 'V2' }, { Key: 'shared/k3' }] } }),
      reply: {
        body: xml('DeleteResult',
          '<Deleted><Key>shared-prefix/k1</Key><DeleteMarker>true</DeleteMarker><DeleteMarkerVersionId>DM1</DeleteMarkerVersionId></Deleted>' +
          '<Deleted><Key>shared-prefix/k2</Key><VersionId>V2</VersionId></Deleted>' +
          '<Error><Key>shared/k3</Key><Code>AccessDenied</Code><Message>no</Message></Error>'),
      },
      expect: { ...bucketOnly, objectKeyPrefix: 'shared', deletedObjects: [{ objectKey: 'shared-prefix/k1', resultingDeleteMarkerVersionId: 'DM1' }, { objectKey: 'shared-prefix/k2', hardDeletedVersionId: 'V2' }] },
    },
    {
      name: 'delete-objects-quiet',
      command: new S3.DeleteObjectsCommand({ ...b, Delete: { Quiet: true, Objects: [{ Key: 'x/1', VersionId: 'q1' }, { Key: 'x/2' }] } }),
      reply: { body: xml('DeleteResult', '<Error><Key>x/2</Key><Code>AccessDenied</Code><Message>no</Message></Error>') },
      expect: { ...bucketOnly, objectKeyPrefix: 'x/', deletedObjects: [{ objectKey: 'x/1', hardDeletedVersionId: 'q1' }] },
    },
    {
      name: 'delete-objects-none', command: new S3.DeleteObjectsCommand({ ...b, Delete: { Objects: [{ Key: 'z' }] } }),
      reply: { body: xml('DeleteResult', '<Error><Key>z</Key><Code>AccessDenied</Code><Message>no</Message></Error>') }, expect: undefined,
    },
    {
      name: 'create-mpu', command: new S3.CreateMultipartUploadCommand(o),
      reply: { body: xml('InitiateMultipartUploadResult', '<Bucket>media</Bucket><Key>a/b.jpg</Key><UploadId>up-1</UploadId>') },
      expect: { ...objectOnly, uploadId: 'up-1' },
    },
    { name: 'upload-part', command: new S3.UploadPartCommand({ ...o, UploadId: 'up-1', PartNumber: 2, Body: Buffer.from('12345') }), expect: { ...objectOnly, uploadId: 'up-1', partNumber: 2, bytes: 5 } },
    {
      name: 'upload-part-copy', command: new S3.UploadPartCopyCommand({ ...o, UploadId: 'up-1', PartNumber: 3, CopySource: '/src/k%C3%A9y%3F.txt', CopySourceRange: 'bytes=0-99' }),
      reply: { body: xml('CopyPartResult', '<ETag>"e"</ETag>') },
      expect: { ...bucketOnly, uploadId: 'up-1', partNumber: 3, bytes: 100, copySource: { bucket: 'src', objectKey: 'kéy?.txt' } },
    },
    {
      name: 'complete-mpu', command: new S3.CompleteMultipartUploadCommand({ ...o, UploadId: 'up-1', MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"e"' }] } }),
      reply: { headers: { 'x-amz-version-id': 'cv1' }, body: xml('CompleteMultipartUploadResult', '<Bucket>media</Bucket><Key>a/b.jpg</Key><ETag>"e"</ETag>') },
      expect: { ...objectOnly, uploadId: 'up-1', versionId: 'cv1' },
    },
    { name: 'abort-mpu', command: new S3.AbortMultipartUploadCommand({ ...o, UploadId: 'up-1' }), reply: { status: 204 }, expect: { ...objectOnly, uploadId: 'up-1' } },
    { name: 'list-parts', command: new S3.ListPartsCommand({ ...o, UploadId: 'up-1' }), reply: { body: xml('ListPartsResult') }, expect: { ...bucketOnly, uploadId: 'up-1' } },
    { name: 'list-mpus', command: new S3.ListMultipartUploadsCommand(b), reply: { body: xml('ListMultipartUploadsResult') }, expect: bucketOnly },
    { name: 'list-buckets', command: new S3.ListBucketsCommand({}), reply: { body: xml('ListAllMyBucketsResult', '<Buckets></Buckets>') }, expect: {} },
    { name: 'delete-bucket', command: new S3.DeleteBucketCommand(b), reply: { status: 204 }, expect: bucketOnly },
    { name: 'head-bucket', command: new S3.HeadBucketCommand(b), expect: bucketOnly },
    { name: 'create-bucket', command: new S3.CreateBucketCommand(b), expect: bucketOnly },
    { name: 'get-bucket-acl', command: new S3.GetBucketAclCommand(b), reply: { body: xml('AccessControlPolicy') }, expect: bucketOnly },
    { name: 'get-bucket-cors', command: new S3.GetBucketCorsCommand(b), reply: { body: xml('CORSConfiguration') }, expect: bucketOnly },
    { name: 'get-bucket-encryption', command: new S3.GetBucketEncryptionCommand(b), reply: { body: xml('ServerSideEncryptionConfiguration') }, expect: bucketOnly },
    { name: 'get-bucket-location', command: new S3.GetBucketLocationCommand(b), reply: { body: xml('LocationConstraint', 'eu-west-1') }, expect: bucketOnly },
    { name: 'get-bucket-versioning', command: new S3.GetBucketVersioningCommand(b), reply: { body: xml('VersioningConfiguration', '<Status>Enabled</Status>') }, expect: bucketOnly },
    { name: 'put-bucket-acl', command: new S3.PutBucketAclCommand({ ...b, ACL: 'private' }), expect: bucketOnly },
    { name: 'put-bucket-cors', command: new S3.PutBucketCorsCommand({ ...b, CORSConfiguration: { CORSRules: [{ AllowedMethods: ['GET'], AllowedOrigins: ['*'] }] } }), expect: bucketOnly },
    {
      name: 'put-bucket-encryption',
      command: new S3.PutBucketEncryptionCommand({ ...b, ServerSideEncryptionConfiguration: { Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] } }),
      expect: bucketOnly,
    },
    { name: 'delete-bucket-cors', command: new S3.DeleteBucketCorsCommand(b), reply: { status: 204 }, expect: bucketOnly },
    { name: 'delete-bucket-encryption', command: new S3.DeleteBucketEncryptionCommand(b), reply: { status: 204 }, expect: bucketOnly },
    { name: 'get-object-lock', command: new S3.GetObjectLockConfigurationCommand(b), reply: { body: xml('ObjectLockConfiguration') }, expect: bucketOnly },
    { name: 'put-object-lock', command: new S3.PutObjectLockConfigurationCommand({ ...b, ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled' } }), expect: bucketOnly },
    { name: 'list-v2', command: new S3.ListObjectsV2Command({ ...b, Prefix: 'a/' }), reply: { body: xml('ListBucketResult') }, expect: { ...bucketOnly, objectKeyPrefix: 'a/' } },
    { name: 'list-versions', command: new S3.ListObjectVersionsCommand({ ...b, Prefix: 'v/' }), reply: { body: xml('ListVersionsResult') }, expect: { ...bucketOnly, objectKeyPrefix: 'v/' } },
    { name: 'head-object', command: new S3.HeadObjectCommand({ ...o, VersionId: 'hv1' }), reply: { headers: { 'x-amz-version-id': 'hv1' } }, expect: { ...objectOnly, versionId: 'hv1' } },
    { name: 'get-object-acl', command: new S3.GetObjectAclCommand({ ...o, VersionId: 'av1' }), reply: { body: xml('AccessControlPolicy') }, expect: { ...objectOnly, versionId: 'av1' } },
    { name: 'put-object-acl', command: new S3.PutObjectAclCommand({ ...o, ACL: 'private' }), expect: objectOnly },
    { name: 'get-object-retention', command: new S3.GetObjectRetentionCommand(o), reply: { body: xml('Retention', '<Mode>GOVERNANCE</Mode>') }, expect: objectOnly },
    { name: 'put-object-retention', command: new S3.PutObjectRetentionCommand({ ...o, VersionId: 'rv1', Retention: { Mode: 'GOVERNANCE', RetainUntilDate: new Date('2030-01-01T00:00:00Z') } }), expect: { ...objectOnly, versionId: 'rv1' } },
    { name: 'get-object-legal-hold', command: new S3.GetObjectLegalHoldCommand(o), reply: { body: xml('LegalHold', '<Status>ON</Status>') }, expect: objectOnly },
    { name: 'put-object-legal-hold', command: new S3.PutObjectLegalHoldCommand({ ...o, LegalHold: { Status: 'ON' } }), expect: objectOnly },
    { name: 'list-v1', command: new S3.ListObjectsCommand(b), reply: { body: xml('ListBucketResult') }, expect: bucketOnly },
  ];
}

describe('instrumentS3: every command, stored by a real bucketmeter', () => {
  let server: ServerProcess;
  let key: string;
  const errors: MeterError[] = [];

  before(async () => {
    server = await startServer({ dataDir: tempDir('bm-client-cmd-') });
    key = server.bootstrapKey!;
  });
  after(async () => {
    await server.stop();
  });

  it('stores exactly the expected event for each call, and none for a call that emits nothing', async () => {
    const meter = new BucketmeterClient({ url: server.url, apiKey: key, exitHooks: false, onError: (e) => errors.push(e) });
    const s3 = scriptedS3();
    instrumentS3(s3.client, meter);
    const all = cases();
    // Every SDK kind of the catalogue has at least one case.
    const covered = new Set(all.map((c) => c.command.constructor.name.replace(/Command$/, '')));
    assert.deepEqual([...covered].sort(), Object.keys(COMMANDS).sort());
    for (const c of all) {
      if (c.reply !== undefined) s3.script.push(c.reply);
      await withAttribution({ clientId: c.name, customerId: 'cus_42' }, () => s3.client.send(c.command as never));
    }
    await meter.close();
    assert.deepEqual(errors, []);
    const [stored, doubles] = await storedEvents(server.url, key);
    assert.equal(doubles.size, 0);
    const byCase = new Map([...stored.values()].map((e) => [e.clientId, e]));
    for (const c of all) {
      const event = byCase.get(c.name);
      if (c.expect === undefined) {
        assert.equal(event, undefined, `${c.name} must emit nothing`);
        continue;
      }
      assert.ok(event, `${c.name}: no stored event`);
      const { eventId, receivedAt, ...fields } = event;
      assert.match(String(eventId), /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, `${c.name}: eventId is a UUIDv7`);
      void receivedAt;
      const action = c.command.constructor.name.replace(/Command$/, '');
      assert.deepEqual(fields, { action, timestamp: TS, provider: 'aws', customerId: 'cus_42', clientId: c.name, ...c.expect }, c.name);
    }
    assert.equal(stored.size, all.filter((c) => c.expect !== undefined).length);
  });
});

describe('instrumentS3: what emits nothing, and what never breaks the S3 call', () => {
  const tracked: unknown[] = [];
  const errors: MeterError[] = [];
  // A meter whose server is never reached: these tests read what track() received.
  function meter(): BucketmeterClient {
    const m = new BucketmeterClient({ url: 'http://127.0.0.1:9', apiKey: 'k', exitHooks: false, onError: (e) => errors.push(e) });
    m.track = (event) => void tracked.push(event);
    return m;
  }

  it('a failed call (4xx/5xx after retries) emits nothing and the SDK error reaches the caller unchanged', async () => {
    tracked.length = 0;
    const s3 = scriptedS3();
    instrumentS3(s3.client, meter());
    // Error replies carry the real time: a skewed Date on an error makes the SDK correct its clock and retry.
    const date = { date: new Date().toUTCString() };
    s3.script.push({ status: 404, headers: date, body: xml('Error', '<Code>NoSuchKey</Code><Message>gone</Message>') });
    await assert.rejects(s3.client.send(new S3.GetObjectCommand({ Bucket: 'media', Key: 'k' })), { name: 'NoSuchKey' });
    s3.script.push({ status: 503, headers: date }, { status: 503, headers: date }, { status: 503, headers: date });
    await assert.rejects(s3.client.send(new S3.HeadBucketCommand({ Bucket: 'media' })));
    assert.deepEqual(tracked, []);
  });

  it('a call that succeeded after SDK retries emits one event', async () => {
    tracked.length = 0;
    const s3 = scriptedS3();
    instrumentS3(s3.client, meter());
    s3.script.push({ status: 503, headers: { date: new Date().toUTCString() } }, { status: 200 });
    await s3.client.send(new S3.HeadBucketCommand({ Bucket: 'media' }));
    assert.equal(s3.sent.length, 2);
    assert.equal(tracked.length, 1);
  });

  it('upload bytes are read from the request as sent, whatever the case of its header names', async () => {
    tracked.length = 0;
    const s3 = scriptedS3();
    instrumentS3(s3.client, meter());
    // An application's own middleware that rewrites the length headers in upper case.
    s3.client.middlewareStack.add(
      (next) => async (args: any) => {
        const headers = args.request.headers as Record<string, string>;
        for (const name of Object.keys(headers)) {
          if (!name.endsWith('content-length')) continue;
          headers[name.toUpperCase()] = headers[name]!;
          delete headers[name];
        }
        return next(args);
      },
      { step: 'finalizeRequest', name: 'upperCaseLengths' },
    );
    await s3.client.send(new S3.PutObjectCommand({ Bucket: 'media', Key: 'k', Body: 'hello' }));
    assert.ok(Object.keys(s3.sent[0]!.headers).includes('CONTENT-LENGTH'));
    assert.deepEqual(tracked.map((e: any) => e.bytes), [5]);
  });

  it('presigning emits nothing', async () => {
    tracked.length = 0;
    const s3 = scriptedS3();
    instrumentS3(s3.client, meter());
    const url = await getSignedUrl(s3.client, new S3.GetObjectCommand({ Bucket: 'media', Key: 'k' }), { expiresIn: 60 });
    assert.match(url, /X-Amz-Signature=/);
    assert.deepEqual(tracked, []);
    assert.equal(s3.sent.length, 0);
  });

  it('instrumenting twice still gives one event per call', async () => {
    tracked.length = 0;
    const s3 = scriptedS3();
    const m = meter();
    instrumentS3(s3.client, m);
    instrumentS3(s3.client, m);
    await s3.client.send(new S3.HeadBucketCommand({ Bucket: 'media' }));
    assert.equal(tracked.length, 1);
  });

  it('attribution: withAttribution per call (nested, concurrent), else defaultAttribution', async () => {
    tracked.length = 0;
    const s3 = scriptedS3();
    instrumentS3(s3.client, meter(), { defaultAttribution: { customerId: 'default', clientType: 'server' } });
    await Promise.all([
      withAttribution({ customerId: 'a' }, () => withAttribution({ featureId: 'export' }, () => s3.client.send(new S3.HeadBucketCommand({ Bucket: 'aaa' })))),
      withAttribution({ customerId: 'b' }, async () => {
        await new Promise((r) => setTimeout(r, 5));
        return s3.client.send(new S3.HeadBucketCommand({ Bucket: 'bbb' }));
      }),
      s3.client.send(new S3.HeadBucketCommand({ Bucket: 'ccc' })),
    ]);
    const pick = (e: any) => [e.bucket, e.customerId, e.featureId, e.clientType];
    assert.deepEqual(tracked.map(pick).sort(), [
      ['aaa', 'a', 'export', 'server'],
      ['bbb', 'b', undefined, 'server'],
      ['ccc', 'default', undefined, 'server'],
    ]);
  });

  it('provider from the endpoint host, or the provider option; isBillableEgress from the option', async () => {
    tracked.length = 0;
    const b2 = scriptedS3({ endpoint: 'https://s3.us-west-004.backblazeb2.com', region: 'us-west-004' });
    instrumentS3(b2.client, meter());
    await b2.client.send(new S3.HeadBucketCommand({ Bucket: 'media' }));
    const minio = scriptedS3({ endpoint: 'http://127.0.0.1:9000', forcePathStyle: true });
    instrumentS3(minio.client, meter(), { provider: 'minio' });
    await minio.client.send(new S3.HeadBucketCommand({ Bucket: 'media' }));
    const aws = scriptedS3({ region: 'eu-west-1' });
    const seen: unknown[] = [];
    instrumentS3(aws.client, meter(), { isBillableEgress: (info) => (seen.push(info), info.region !== 'eu-west-1') });
    aws.script.push({ body: 'abc' });
    await aws.client.send(new S3.GetObjectCommand({ Bucket: 'media', Key: 'k' }));
    assert.deepEqual(tracked.map((e: any) => [e.provider, e.isBillableEgress]), [['backblaze', undefined], ['minio', undefined], ['aws', false]]);
    assert.deepEqual(seen, [{ bucket: 'media', objectKey: 'k', bytes: 3, provider: 'aws', host: 'media.s3.eu-west-1.amazonaws.com', region: 'eu-west-1' }]);
  });

  it('an exception inside metering is reported through onError, never thrown into the S3 call', async () => {
    tracked.length = 0;
    errors.length = 0;
    const s3 = scriptedS3();
    instrumentS3(s3.client, meter(), { isBillableEgress: () => { throw new Error('user callback broke'); } });
    s3.script.push({ body: 'abc' });
    const out = await s3.client.send(new S3.GetObjectCommand({ Bucket: 'media', Key: 'k' }));
    assert.equal(await out.Body!.transformToString(), 'abc');
    assert.deepEqual(tracked, []);
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.kind, 'instrumentation');
    assert.match(errors[0]!.message, /GetObjectCommand: Error: user callback broke/);
  });
});
