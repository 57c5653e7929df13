/**
 * Regenerates the README's tables from their sources of truth (event catalogue, settings, error
 * catalogue) and docs/openapi.json (what a node serves at /openapi.json). `npm run docs` writes
 * them; test/docs.test.ts and test/http/openapi.test.ts fail when either is stale.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ACTION_NAMES, COMMON_FIELDS, DELETED_VERSION_DIALECT, FIELD_FALLBACKS, FIELDS, KINDS, SDK_MEMBERS } from '../src/events/catalogue.js';
import type { ActionName, FieldName } from '../src/events/catalogue.js';
import { SETTINGS, loadConfig } from '../src/config.js';
import { ERRORS } from '../src/errors.js';
import { createLogger, openStore, startNode } from '../src/runtime.js';

export const README = fileURLToPath(new URL('../../README.md', import.meta.url));
export const OPENAPI = fileURLToPath(new URL('../../docs/openapi.json', import.meta.url));

const cell = (s: string) => s.replace(/\|/g, '\\|');

export function renderKinds(): string {
  const rows = ACTION_NAMES.map((name) => {
    const k = KINDS[name];
    const list = (fields: readonly string[]) => (fields.length === 0 ? '–' : fields.map((f) => `\`${f}\``).join(', '));
    return `| \`${name}\` | ${k.code} | ${list(k.required)} | ${list(k.optional)} | ${cell(k.doc)} |`;
  });
  const common = Object.entries(COMMON_FIELDS).map(([name, f]) => `| \`${name}\` | ${f.required ? 'required' : 'optional'} | ${cell(f.doc)} |`);
  const fields = Object.entries(FIELDS).map(([name, f]) => `| \`${name}\` | ${f.type} | ${cell(f.doc)} |`);
  return [
    'Common fields (every kind):',
    '',
    '| field | | meaning |',
    '|---|---|---|',
    ...common,
    '',
    `Event kinds (${ACTION_NAMES.length}):`,
    '',
    '| action | code | required | optional | meaning |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    'Kind-specific fields:',
    '',
    '| field | type | meaning |',
    '|---|---|---|',
    ...fields,
  ].join('\n');
}

/** The SDK dialect's members and where each is stored. */
export function renderDialects(): string {
  const code = (name: string) => `\`${name}\``;
  const kinds = (names: readonly string[]) => names.join(', ');
  const { versionId, flag, whenFlagged, otherwise } = DELETED_VERSION_DIALECT;
  const entries = kinds([...DELETED_VERSION_DIALECT.kinds, 'each `deletedObjects` entry']);
  const having = (field: FieldName) => ACTION_NAMES.filter((name) => (KINDS[name].optional as readonly string[]).includes(field));
  const rows = [
    `| ${code(versionId)} with ${code(`${flag}: true`)} | ${entries} | ${code(whenFlagged)} (the delete marker the delete created) |`,
    `| ${code(versionId)} with ${code(flag)} false or absent | ${entries} | ${code(otherwise)} (the version removed) |`,
    ...Object.entries(FIELD_FALLBACKS).map(([field, source]) => `| ${code(source)} | ${kinds(having(source))} | ${code(source)}, a field of its own; also ${code(field)} when that is not given |`),
    ...SDK_MEMBERS.map(({ member, kinds: names, keptAs }) => `| ${code(member)} | ${kinds(names as readonly ActionName[])} | ${code(member)}: ${cell(keptAs)} |`),
  ];
  return ['| SDK dialect | kinds | stored as |', '|---|---|---|', ...rows].join('\n');
}

export function renderSettings(): string {
  const rows = Object.values(SETTINGS).map((s) => `| \`--${s.flag}\` | \`${s.env}\` | ${s.default === undefined ? '–' : `\`${String(s.default)}\``} | ${cell(s.doc)} |`);
  return ['| flag | environment | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

export function renderErrors(): string {
  const rows = Object.entries(ERRORS).map(([code, e]) => `| \`${code}\` | ${e.status} | ${cell(e.title)} | ${cell(e.hint)} |`);
  return ['| code | status | title | what to do |', '|---|---|---|---|', ...rows].join('\n');
}

const SECTIONS: Record<string, () => string> = { kinds: renderKinds, dialects: renderDialects, settings: renderSettings, errors: renderErrors };

/** The README with every generated section replaced by its current rendering. */
export function regenerate(readme: string): string {
  let out = readme;
  for (const [name, render] of Object.entries(SECTIONS)) {
    const pattern = new RegExp(`(<!-- generated:${name} -->\\n)[\\s\\S]*?(<!-- /generated:${name} -->)`);
    if (!pattern.test(out)) throw new Error(`README has no generated:${name} section`);
    out = out.replace(pattern, (_m, open: string, close: string) => open + render() + '\n' + close);
  }
  return out;
}

/** The OpenAPI document as a node serves it (from a throwaway SQLite store), as committed. */
export async function renderOpenApi(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'bm-openapi-'));
  const config = loadConfig({ port: '0', host: '127.0.0.1', 'data-dir': dir }, {});
  const logger = createLogger('silent');
  const node = await startNode(config, logger, await openStore(config, logger));
  try {
    return `${JSON.stringify(node.app.swagger(), null, 2)}\n`;
  } finally {
    await node.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(README, regenerate(readFileSync(README, 'utf8')));
  console.log(`updated ${README}`);
  writeFileSync(OPENAPI, await renderOpenApi());
  console.log(`updated ${OPENAPI}`);
}
