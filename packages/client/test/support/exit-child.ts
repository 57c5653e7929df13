/**
 * A process that uses the client and then ends in the way argv says, for the exit tests:
 *   node exit-child.js <url> <key> <count> <mode> [spoolDir]
 * modes: natural (the event loop runs dry), sigterm (waits for SIGTERM), exit (process.exit(0) at
 * once), stream (tracks for ever until killed; prints each tracked index).
 * Event i has eventId `<prefix>-<i>`, prefix from BM_PREFIX.
 */
import { BucketmeterClient } from '../../src/index.js';

const [url, apiKey, countText, mode, spoolDir] = process.argv.slice(2);
const count = Number(countText);
const prefix = process.env.BM_PREFIX ?? 'x';
const meter = new BucketmeterClient({ url: url!, apiKey, maxDelayMs: 60_000, ...(spoolDir ? { spoolDir } : {}) });
const event = (i: number) => ({ action: 'HeadBucket', provider: 'aws', bucket: 'media', timestamp: '2026-01-01T00:00:00Z', eventId: `${prefix}-${i}` });

if (mode === 'stream') {
  let i = 0;
  const tick = () => {
    for (let k = 0; k < 200; k++, i++) meter.track(event(i));
    process.stdout.write(`${i}\n`);
    setTimeout(tick, 5);
  };
  tick();
} else {
  for (let i = 0; i < count; i++) meter.track(event(i));
  if (mode === 'sigterm') {
    setInterval(() => {}, 1000); // the application's own work keeps running until the signal
    process.stdout.write('ready\n');
  }
  if (mode === 'exit') process.exit(0);
}
