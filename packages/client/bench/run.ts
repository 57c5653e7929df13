/**
 * The package's figures, on this machine:
 *  1. instrumentS3 overhead per S3 call: median time of the same GetObject through a real S3Client
 *     with a scripted request handler, with and without the middleware (alternating call by call, so both
 *     see the same machine load), in several rounds: the figure is the median of the rounds' differences.
 *  2. One process tracking events: events/s delivered to a local bucketmeter (answered by the server),
 *     with every object key new (the server's worst case) and with keys from a working set; and to a
 *     stand-in server that only reads the batches (bench/sink.ts), the client's own ceiling. Peak RSS
 *     and CPU of the tracking process, CPU of the server.
 * The load average is printed with each figure, and with each delivery the CPU other processes took
 * meanwhile (in cores): the machine may be shared, and delivery takes most of its two cores.
 * `npm run bench -w @bucketmeter/client [-- --quick]`. Needs the root build (the server).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
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

/**
 * Answers on the next turn of the event loop, as a socket would. An answer within the same turn
 * (promises only) would starve the event loop for the whole run: the meter could not send, and the
 * metered calls would pay for a queue that only grows, which no application sees.
 */
function scriptedClient(): S3.S3Client {
  const body = Buffer.from('abcd');
  return new S3.S3Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
    requestHandler: {
      handle: () =>
        new Promise((answer) =>
          setImmediate(() =>
            answer({ response: { statusCode: 200, headers: { date: new Date().toUTCString(), 'content-length': '4', 'x-amz-version-id': 'v1' }, body: Readable.from([body]) } }),
          ),
        ),
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
  const once = async (client: S3.S3Client, i: number) => {
    const t0 = process.hrtime.bigint();
    await client.send(new S3.GetObjectCommand({ Bucket: 'media', Key: `k/${i}` }));
    return Number(process.hrtime.bigint() - t0) / 1000;
  };
  // Warm-up: JIT and the SDK's lazily resolved config.
  for (let i = 0; i < 1000; i++) await once(plain, i), await once(metered, i);
  const rounds = quick ? 5 : 9;
  const calls = quick ? 2000 : 5000;
  const results: { plainUs: number; meteredUs: number; overheadUs: number; cpuOverheadUs: number; load: number }[] = [];
  for (let r = 0; r < rounds; r++) {
    const times: Record<'plain' | 'metered', number[]> = { plain: [], metered: [] };
    const cpu = { plain: 0, metered: 0 };
    // Call by call, alternating which goes first, so both see the same machine load.
    for (let i = 0; i < calls; i++) {
      for (const which of i % 2 === 0 ? (['plain', 'metered'] as const) : (['metered', 'plain'] as const)) {
        const c0 = process.cpuUsage();
        times[which].push(await once(which === 'plain' ? plain : metered, i));
        const c = process.cpuUsage(c0);
        cpu[which] += c.user + c.system;
      }
    }
    const plainUs = median(times.plain);
    const meteredUs = median(times.metered);
    // CPU per call (mean; the process's, so the sending of the events is in it), less disturbed by other processes than wall time.
    results.push({ plainUs, meteredUs, overheadUs: meteredUs - plainUs, cpuOverheadUs: (cpu.metered - cpu.plain) / calls, load: loadavg()[0]! });
  }
  const stats = await meter.close({ timeoutMs: 30_000 });
  const diffs = results.map((r) => r.overheadUs);
  const round1 = (x: number) => +x.toFixed(1);
  return {
    rounds,
    callsPerRound: calls,
    plainMedianUs: round1(median(results.map((r) => r.plainUs))),
    meteredMedianUs: round1(median(results.map((r) => r.meteredUs))),
    overheadUs: round1(median(diffs)),
    overheadRangeUs: [round1(Math.min(...diffs)), round1(Math.max(...diffs))],
    cpuOverheadUs: round1(median(results.map((r) => r.cpuOverheadUs))),
    loadAverages: results.map((r) => +r.load.toFixed(1)),
    eventsSent: stats.sent,
  };
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** CPU seconds of this process and of its children it has waited for (the tracking process, once it exited). */
function ownAndChildrenCpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100; // utime, stime, cutime, cstime
}

/**
 * CPU seconds all processes of the machine have run so far (/proc/stat: user, nice, system, steal;
 * not interrupts, which loopback's network processing takes and no process is charged for).
 */
function machineTaskCpuSeconds(): number {
  const [user, nice, system, , , , , steal] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (user! + nice! + system! + steal!) / 100;
}

/** In its own process (bench/track.ts), so RSS is the tracking process's, without the AWS SDK. */
async function throughput(url: string, apiKey: string, serverPid: number, keys: 'distinct' | 'working-set') {
  const total = quick ? 200_000 : 1_000_000;
  const serverCpu0 = cpuSecondsOf(serverPid);
  const load = loadavg()[0]!;
  const machine0 = machineTaskCpuSeconds();
  const own0 = ownAndChildrenCpuSeconds();
  const t0 = performance.now();
  const out = await runNode(join(import.meta.dirname, 'track.js'), [url, apiKey, String(total), keys], true);
  const result = JSON.parse(out) as { events: number; seconds: number; eventsPerSecond: number; peakRssMB: number; cpuSeconds: number; cpuMicrosPerEvent: number; stats: unknown };
  const serverCpuSeconds = cpuSecondsOf(serverPid) - serverCpu0;
  // The load average trails by minutes; this is what else ran during this run, in cores: the share
  // of the two cores the figures above did not have.
  const others = (machineTaskCpuSeconds() - machine0 - serverCpuSeconds - (ownAndChildrenCpuSeconds() - own0)) / ((performance.now() - t0) / 1000);
  return {
    keys,
    ...result,
    serverCpuSeconds: +serverCpuSeconds.toFixed(2),
    serverCpuMicrosPerEvent: +((serverCpuSeconds * 1e6) / total).toFixed(1),
    loadAverage: +((load + loadavg()[0]!) / 2).toFixed(1),
    otherProcessesCores: +Math.max(0, others).toFixed(2),
  };
}

/** Runs a script of this bench with node; resolves with its stdout once it exits (or, with untilExit false, its first line). */
function runNode(script: string, args: string[], untilExit: boolean): Promise<string> & { child?: ReturnType<typeof spawn> } {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const done = new Promise<string>((resolve) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (!untilExit && out.includes('\n')) resolve(out);
    });
    child.on('exit', () => resolve(out));
  });
  return Object.assign(done, { child });
}

/**
 * The middleware's own cost per call, without the SDK around it: the middleware instrumentS3 adds,
 * run on a GetObject's real shapes (input, request headers as the SDK sends them, output, response),
 * with the next handler answering at once. On a loaded machine this is the stable figure; the A/B
 * difference above carries the noise of a ~400 µs SDK call.
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
    const handler = added.bucketmeter!(async () => result, { commandName: 'GetObjectCommand' });
    const t0 = process.hrtime.bigint();
    await handler({ input: { Bucket: 'media', Key: `k/${i}` }, request });
    if (i >= 5000) times.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  await meter.close({ timeoutMs: 30_000 });
  return { calls, medianUs: +median(times).toFixed(2) };
}

const server = await startServer({ dataDir: tempDir('bm-client-bench-') });
const sinkRun = runNode(join(import.meta.dirname, 'sink.js'), [], false);
try {
  const o = await overhead(server.url, server.bootstrapKey!);
  console.log(`instrumentS3 overhead: median ${o.overheadUs} µs per call (rounds: ${o.overheadRangeUs.join(' to ')} µs; ${o.rounds} rounds of ${o.callsPerRound} calls each, alternating; ${o.meteredMedianUs} µs with vs ${o.plainMedianUs} µs without); CPU: +${o.cpuOverheadUs} µs per call; load ${o.loadAverages.join(', ')}`);
  const self = await selfCost(server.url, server.bootstrapKey!);
  console.log(`instrumentS3 own cost: median ${self.medianUs} µs per call (${self.calls} calls; event made and queued, handler answering at once)`);
  const sink = (JSON.parse(await sinkRun) as { url: string }).url;
  const runs = [
    { to: 'bucketmeter', ...(await throughput(server.url, server.bootstrapKey!, server.child.pid!, 'distinct')) },
    { to: 'bucketmeter', ...(await throughput(server.url, server.bootstrapKey!, server.child.pid!, 'working-set')) },
    { to: 'sink', ...(await throughput(sink, 'bench', sinkRun.child!.pid!, 'distinct')) },
  ];
  for (const t of runs) {
    console.log(`delivery to ${t.to === 'sink' ? 'a stand-in that only reads the batches (client ceiling)' : 'a local bucketmeter'}, ${t.keys} keys: ${t.events} events in ${t.seconds} s → ${t.eventsPerSecond} events/s; peak RSS ${t.peakRssMB} MB; CPU per event: client ${t.cpuMicrosPerEvent} µs, ${t.to} ${t.serverCpuMicrosPerEvent} µs; load ${t.loadAverage}, other processes ${t.otherProcessesCores} cores; stats ${JSON.stringify(t.stats)}`);
  }
  console.log(JSON.stringify({ node: process.version, quick, noUsage: process.env.BUCKETMETER_BENCH_NO_USAGE === '1', overhead: o, selfCost: self, throughput: runs }));
} finally {
  sinkRun.child!.kill();
  await server.stop();
}
