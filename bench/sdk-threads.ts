/**
 * CPU per delivered SDK event of each server thread: the client package's delivery step
 * (packages/client/bench/track.ts) against `bin/bucketmeter serve` on an empty SQLite store, the
 * server's threads read from /proc/PID/task/* 1 s after it started and 1.5 s after the client
 * finished. The busiest thread besides the main one is the SQLite writer. CPU per event stays
 * readable on a busy machine, where events/s does not.
 *   node dist/bench/sdk-threads.js [--tree DIR] [--keys working-set|distinct] [--events N] [--runs N]
 * `--tree`: the checkout whose server and client run (built; default this one): A/B runs of two
 * builds use the same script. One JSON line per run: events/s, client and server µs per event, and
 * per thread (writer, main, the rest), with the load average.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    tree: { type: 'string', default: resolve(import.meta.dirname, '../..') },
    keys: { type: 'string', default: 'working-set' },
    events: { type: 'string', default: '200000' },
    runs: { type: 'string', default: '1' },
  },
});
const tree = resolve(values.tree);
const events = Number(values.events);

interface Server {
  url: string;
  bootstrapKey?: string;
  child: { pid?: number };
  stop(): Promise<unknown>;
}
const { startServer, tempDir } = (await import(join(tree, 'dist/test/support/server.js'))) as {
  startServer(o: { dataDir: string }): Promise<Server>;
  tempDir(prefix: string): string;
};

/** CPU seconds (user + system) of each thread of `pid`, by tid. */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(tid, (Number(fields[11]) + Number(fields[12])) / 100); // utime, stime in clock ticks (USER_HZ = 100)
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
const micros = (seconds: number) => +((seconds * 1e6) / events).toFixed(2);

for (let run = 0; run < Number(values.runs); run++) {
  const server = await startServer({ dataDir: tempDir('bm-sdk-threads-') });
  const pid = server.child.pid!;
  try {
    await sleep(1000);
    const before = threadCpu(pid);
    const load = loadavg()[0]!;
    const out = await new Promise<string>((done) => {
      const child = spawn(process.execPath, [join(tree, 'packages/client/dist/bench/track.js'), server.url, server.bootstrapKey!, String(events), values.keys], { stdio: ['ignore', 'pipe', 'inherit'] });
      let text = '';
      child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.on('exit', () => done(text));
    });
    await sleep(1500);
    const used = [...threadCpu(pid)].map(([tid, cpu]) => ({ tid, cpu: cpu - (before.get(tid) ?? 0) }));
    const main = used.find((t) => t.tid === String(pid))?.cpu ?? 0;
    const others = used.filter((t) => t.tid !== String(pid)).sort((a, b) => b.cpu - a.cpu);
    const writer = others[0]?.cpu ?? 0;
    const rest = others.slice(1).reduce((sum, t) => sum + t.cpu, 0);
    const client = JSON.parse(out) as { eventsPerSecond: number; cpuMicrosPerEvent: number; peakRssMB: number };
    console.log(
      JSON.stringify({
        tree,
        keys: values.keys,
        eventsPerSecond: client.eventsPerSecond,
        clientUs: client.cpuMicrosPerEvent,
        serverUs: micros(main + writer + rest),
        writerUs: micros(writer),
        mainUs: micros(main),
        otherThreadsUs: micros(rest),
        clientPeakRssMB: client.peakRssMB,
        load: +((load + loadavg()[0]!) / 2).toFixed(1),
      }),
    );
  } finally {
    await server.stop();
  }
}
