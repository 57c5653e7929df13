/**
 * The package's figures, on this machine:
 *  1. instrumentS3 overhead per S3 call: median time of the same GetObject through a real S3Client
 *     with a scripted request handler, with and without the middleware (alternating call by call, so both
 *     see the same machine load).
 *  2. One process tracking events: events/s delivered to a local bucketmeter (answered by the server),
 *     and the process's peak RSS.
 * `npm run bench -w @bucketmeter/client [-- --quick]`. Needs the root build (the server).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import * as S3 from '@aws-sdk/client-s3';
import { BucketmeterClient, instrumentS3 } from '../src/index.js';

const quick = process.argv.includes('--quick');
const ROOT = new URL('../../../../', import.meta.url);
const { startServer, tempDir } = (await import(new URL('dist/test/support/server.js', ROOT).href)) as {
  startServer(o: { dataDir: string }): Promise<{ url: string; bootstrapKey?: string; child: { pid?: number }; stop(): Promise<unknown> }>;
  tempDir(prefix: string): string;
};

function scriptedClient(): S3.S3Client {
  const body = Buffer.from('abcd');
  return new S3.S3Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
    requestHandler: {
      handle: async () => ({
        response: { statusCode: 200, headers: { date: new Date().toUTCString(), 'content-length': '4', 'x-amz-version-id': 'v1' }, body: Readable.from([body]) },
      }),
    } as never,
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

async function overhead(url: string, apiKey: string) {
  const meter = new BucketmeterClient({ url, apiKey, exitHooks: false });
  const plain = scriptedClient();
  const metered = scriptedClient();
  instrumentS3(metered, meter, { defaultAttribution: { customerId: 'cus_1', featureId: 'bench' } });
  const times: Record<'plain' | 'metered', number[]> = { plain: [], metered: [] };
  const calls = quick ? 5000 : 20_000;
  const once = async (client: S3.S3Client, i: number) => {
    const t0 = process.hrtime.bigint();
    await client.send(new S3.GetObjectCommand({ Bucket: 'media', Key: `k/${i}` }));
    return Number(process.hrtime.bigint() - t0) / 1000;
  };
  // Warm-up: JIT and the SDK's lazily resolved config.
  for (let i = 0; i < 1000; i++) await once(plain, i), await once(metered, i);
  // Call by call, alternating which goes first, so both see the same machine load.
  const cpu0 = { plain: 0, metered: 0 };
  for (let i = 0; i < calls; i++) {
    for (const which of i % 2 === 0 ? (['plain', 'metered'] as const) : (['metered', 'plain'] as const)) {
      const c0 = process.cpuUsage();
      times[which].push(await once(which === 'plain' ? plain : metered, i));
      const c = process.cpuUsage(c0);
      cpu0[which] += c.user + c.system;
    }
  }
  const stats = await meter.close({ timeoutMs: 30_000 });
  const plainUs = median(times.plain);
  const meteredUs = median(times.metered);
  return {
    calls: times.plain.length,
    plainMedianUs: +plainUs.toFixed(1),
    meteredMedianUs: +meteredUs.toFixed(1),
    overheadUs: +(meteredUs - plainUs).toFixed(1),
    // CPU per call (mean), less disturbed by other processes than wall time.
    cpuOverheadUs: +((cpu0.metered - cpu0.plain) / calls).toFixed(1),
    eventsSent: stats.sent,
  };
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** In its own process (bench/track.ts), so RSS is the tracking process's, without the AWS SDK. */
async function throughput(url: string, apiKey: string, serverPid: number) {
  const total = quick ? 200_000 : 1_000_000;
  const serverCpu0 = cpuSecondsOf(serverPid);
  const child = spawn(process.execPath, [join(import.meta.dirname, 'track.js'), url, apiKey, String(total)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  await new Promise((done) => child.on('exit', done));
  const result = JSON.parse(out) as { events: number; seconds: number; eventsPerSecond: number; peakRssMB: number; cpuSeconds: number; cpuMicrosPerEvent: number; stats: unknown };
  return { ...result, serverCpuSeconds: +(cpuSecondsOf(serverPid) - serverCpu0).toFixed(2) };
}

/**
 * The middleware's own cost per call, without the SDK around it: the two middlewares instrumentS3
 * adds, run on a GetObject's real shapes (input, request headers as the SDK sends them, output,
 * response), with the next handler answering at once. On a loaded machine this is the stable
 * figure; the A/B difference above carries the noise of a ~400 µs SDK call.
 */
async function selfCost(url: string, apiKey: string) {
  const meter = new BucketmeterClient({ url, apiKey, exitHooks: false });
  type Handler = (args: object) => Promise<object>;
  type Mw = (next: Handler, context: object) => Handler;
  const added: Record<string, Mw> = {};
  instrumentS3({ middlewareStack: { add: (mw: Mw, o: { name: string }) => (added[o.name] = mw) } }, meter, { defaultAttribution: { customerId: 'cus_1', featureId: 'bench' } });
  const request = {
    hostname: 'media.s3.us-east-1.amazonaws.com',
    headers: { 'x-amz-user-agent': 'aws-sdk-js/3', 'user-agent': 'aws-sdk-js/3 ua/2.1 os/linux lang/js md/nodejs#20', 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', 'x-amz-date': '20261123T184853Z', 'x-amz-checksum-mode': 'ENABLED', authorization: 'AWS4-HMAC-SHA256 Credential=...', 'amz-sdk-invocation-id': 'x', 'amz-sdk-request': 'attempt=1; max=3', host: 'media.s3.us-east-1.amazonaws.com' },
  };
  const result = { output: { ContentLength: 4, VersionId: 'v1', ETag: '"e"', $metadata: { httpStatusCode: 200 } }, response: { statusCode: 200, headers: { date: 'Mon, 23 Nov 2026 18:48:53 GMT', 'content-length': '4', 'x-amz-version-id': 'v1' } } };
  const times: number[] = [];
  const calls = quick ? 20_000 : 100_000;
  for (let i = 0; i < calls + 5000; i++) {
    const context = { commandName: 'GetObjectCommand' };
    const inner = added.bucketmeterCapture!(async () => result, context);
    const outer = added.bucketmeterEmit!(async (args) => inner({ ...args, request }), context);
    const t0 = process.hrtime.bigint();
    await outer({ input: { Bucket: 'media', Key: `k/${i}` } });
    if (i >= 5000) times.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  await meter.close({ timeoutMs: 30_000 });
  return { calls, medianUs: +median(times).toFixed(2) };
}

const server = await startServer({ dataDir: tempDir('bm-client-bench-') });
try {
  const o = await overhead(server.url, server.bootstrapKey!);
  console.log(`instrumentS3 overhead: median ${o.meteredMedianUs} µs with vs ${o.plainMedianUs} µs without → ${o.overheadUs} µs per call (${o.calls} calls each, alternating); CPU: +${o.cpuOverheadUs} µs per call`);
  const self = await selfCost(server.url, server.bootstrapKey!);
  console.log(`instrumentS3 own cost: median ${self.medianUs} µs per call (${self.calls} calls; event made and queued, handler answering at once)`);
  const t = await throughput(server.url, server.bootstrapKey!, server.child.pid!);
  console.log(`delivery: ${t.events} events in ${t.seconds} s → ${t.eventsPerSecond} events/s answered by the server; peak RSS ${t.peakRssMB} MB; CPU: client ${t.cpuSeconds} s (${t.cpuMicrosPerEvent} µs per event), server ${t.serverCpuSeconds} s; stats ${JSON.stringify(t.stats)}`);
  console.log(JSON.stringify({ node: process.version, quick, overhead: o, selfCost: self, throughput: t }));
} finally {
  await server.stop();
}
