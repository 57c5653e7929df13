/** `bucketmeter --help` and `bucketmeter <command> --help`: every flag of a command, with its default. */
import { SETTINGS } from '../config.js';

type SettingName = keyof typeof SETTINGS;

interface Help {
  usage: string;
  about: string;
  /** Flags of the command itself: [flag, meaning]. */
  flags?: [string, string][];
  settings: readonly SettingName[];
}

const STORE: readonly SettingName[] = ['dataDir', 'databaseUrl', 'pgPoolMax'];
const LIMIT_FLAG: [string, string] = ['--limit N', 'most entries shown (default 100)'];
const TENANT_FILTER: [string, string] = ['--tenant NAME', "only this tenant's entries (default: every tenant)"];

const COMMANDS: Record<string, Help> = {
  serve: {
    usage: 'bucketmeter serve [settings]',
    about: 'Runs the HTTP server. On the first start with SQLite it creates the database and prints one key for tenant "default".',
    settings: Object.keys(SETTINGS) as SettingName[],
  },
  'keys create': {
    usage: 'bucketmeter keys create --tenant NAME [--init] [store settings]',
    about: 'Creates an API key for the tenant (creating the tenant if new) and prints only the key, once.',
    flags: [
      ['--tenant NAME', 'tenant: 1-64 of a-z 0-9 . _ -, starting with a letter or digit (required)'],
      ['--init', 'create the SQLite database if there is none (default: refuse, naming the path looked at)'],
    ],
    settings: STORE,
  },
  'keys list': { usage: 'bucketmeter keys list [store settings]', about: 'Lists keys: id, tenant, created, revoked. Never the keys.', settings: STORE },
  'keys revoke': { usage: 'bucketmeter keys revoke ID [store settings]', about: 'Revokes a key by its id (see keys list).', settings: STORE },
  'quarantine list': {
    usage: 'bucketmeter quarantine list [--tenant NAME] [--all] [--limit N] [--oldest-first] [store settings]',
    about: 'Lists rejected inputs, newest first. Control characters from the inputs are shown escaped (\\u001b).',
    flags: [TENANT_FILTER, ['--all', 'include entries already replayed (default: not)'], LIMIT_FLAG, ['--oldest-first', 'oldest first (default: newest first)']],
    settings: STORE,
  },
  'quarantine show': { usage: 'bucketmeter quarantine show ID [store settings]', about: 'One entry as JSON, its body included.', settings: STORE },
  'quarantine export': {
    usage: 'bucketmeter quarantine export [--tenant NAME] [--all] [store settings]',
    about: 'Every entry as NDJSON on stdout, oldest first.',
    flags: [TENANT_FILTER, ['--all', 'include entries already replayed (default: not)']],
    settings: STORE,
  },
  'quarantine replay': {
    usage: 'bucketmeter quarantine replay [--tenant NAME] [store settings]',
    about: "Runs each entry through today's validation; stores what passes, once.",
    flags: [TENANT_FILTER],
    settings: [...STORE, 'maxFutureSeconds', 'maxExtraBytes'],
  },
  'prices list': {
    usage: 'bucketmeter prices list [--prices DIR] [--bucket-plans FILE]',
    about: 'Every price plan version (shipped and from --prices), and the bucket and provider assignments of --bucket-plans.',
    settings: ['prices', 'bucketPlans'],
  },
  'prices show': { usage: 'bucketmeter prices show PLAN-ID [--prices DIR]', about: "One plan's versions as JSON.", settings: ['prices'] },
};

export const USAGE = `usage:
${Object.values(COMMANDS).map((c) => `  ${c.usage}`).join('\n')}
  bucketmeter --version
\`bucketmeter <command> --help\` lists a command's flags and their defaults. Every setting also has an
environment variable; see README "Configuration".`;

/** Help for `words` (e.g. ['keys', 'create']), or for every subcommand of a group (['keys']). */
export function helpFor(words: string[]): string {
  const name = words.slice(0, 2).join(' ');
  const exact = COMMANDS[name] ?? COMMANDS[words[0] ?? ''];
  if (exact !== undefined) return describe(exact);
  const group = Object.entries(COMMANDS).filter(([n]) => n.startsWith(`${words[0]} `));
  if (group.length === 0) return USAGE;
  return group.map(([, help]) => describe(help)).join('\n\n');
}

function describe(help: Help): string {
  const rows: [string, string][] = [
    ...(help.flags ?? []),
    ...help.settings.map((name): [string, string] => {
      const s = SETTINGS[name];
      const arg = s.kind === 'bool' ? '' : ' ' + (s.kind === 'int' ? 'N' : 'VALUE');
      const fallback = s.default === undefined ? 'none' : String(s.default);
      return [`--${s.flag}${arg}`, `${s.doc} (default ${fallback}; env ${s.env})`];
    }),
  ];
  const width = Math.max(...rows.map(([flag]) => flag.length));
  return `usage: ${help.usage}\n${help.about}\n\n${rows.map(([flag, doc]) => `  ${flag.padEnd(width)}  ${doc}`).join('\n')}`;
}
