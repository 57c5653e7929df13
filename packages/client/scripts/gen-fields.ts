/**
 * Writes the README's per-command field table from src/s3/commands.ts (each source describes
 * itself). `npm run docs -w @bucketmeter/client` writes it; test/docs.test.ts fails when it is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { COMMANDS, NOT_FROM_SDK } from '../src/s3/commands.js';

export const README = fileURLToPath(new URL('../../README.md', import.meta.url));

const cell = (s: string) => s.replace(/\|/g, '\\|');

export function renderFields(): string {
  const rows = Object.entries(COMMANDS).map(([action, spec]) => {
    const fields = Object.entries(spec.fields).map(([name, source]) => `\`${name}\` ← ${cell(source.doc)}`);
    if (action === 'GetObject') fields.push('`isBillableEgress` ← the `isBillableEgress` option, when given');
    if (spec.skip !== undefined) fields.push(`*${cell(spec.skip.doc)}*`);
    return `| \`${action}\` | \`${action}Command\` | ${fields.length === 0 ? '(common fields only)' : fields.join('<br>')} |`;
  });
  const absent = Object.entries(NOT_FROM_SDK).map(([action, why]) => `| \`${action}\` | – | ${cell(why)} |`);
  return [
    'Every event: `action` ← the command name without `Command`; `timestamp` ← the response `Date` header',
    "(the storage server's clock), else the local clock; `provider` ← the `provider` option, else the",
    'endpoint host (`amazonaws.com` aws, `backblazeb2.com` backblaze, `wasabisys.com` wasabi,',
    '`r2.cloudflarestorage.com` cloudflare, `storage.googleapis.com` gcp, `digitaloceanspaces.com`',
    'digitalocean), else `other`; `customerId`, `featureId`, `clientType`, `clientId` ← `withAttribution`,',
    'else `defaultAttribution`; `eventId` ← a UUIDv7 made when the event is queued. A field whose source is',
    'absent or empty is left out.',
    '',
    `| action | SDK command | fields (${Object.keys(COMMANDS).length} commands) |`,
    '|---|---|---|',
    ...rows,
    ...absent,
  ].join('\n');
}

export function regenerate(readme: string): string {
  const pattern = /(<!-- generated:fields -->\n)[\s\S]*?(<!-- \/generated:fields -->)/;
  if (!pattern.test(readme)) throw new Error('README has no generated:fields section');
  return readme.replace(pattern, (_m, open: string, close: string) => open + renderFields() + '\n' + close);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(README, regenerate(readFileSync(README, 'utf8')));
  console.log(`updated ${README}`);
}
