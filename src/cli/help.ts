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

/** The usage query's parameters as flags: `usage` and `costs` take the same. */
const QUERY_FLAGS: [string, string][] = [
  ['--tenant NAME', 'tenant (required)'],
  ['--from T, --to T', 'ISO 8601 with a zone, whole hours (required)'],
  ['--granularity G', 'hour, day, month or none (default none)'],
  ['--timeZone Z', 'IANA zone (default UTC)'],
  ['--groupBy D,...', 'provider, bucket, customerId, featureId, clientType, clientId, action'],
  ['--customerId V ...', 'filter by any dimension, repeatable; an empty value matches none'],
];

const COMMANDS: Record<string, Help> = {
  serve: {
    usage: 'bucketmeter serve [settings]',
    about: 'Runs the HTTP server. On the first start with SQLite it creates the database and prints one key for tenant "default".',
    settings: Object.keys(SETTINGS) as SettingName[],
  },
  'keys create': {
    usage: 'bucketmeter keys create --tenant NAME [--scope ingest|read|all] [--init] [store settings]',
    about: 'Creates an API key for the tenant (creating the tenant if new) and prints only the key, once.',
    flags: [
      ['--tenant NAME', 'tenant: 1-64 of a-z 0-9 . _ -, starting with a letter or digit (required)'],
      ['--scope S', 'ingest (send events), read (/v1/*) or all (default all)'],
      ['--init', 'create the SQLite database if there is none (default: refuse, naming the path looked at)'],
    ],
    settings: STORE,
  },
  'keys list': { usage: 'bucketmeter keys list [store settings]', about: 'Lists keys: id, tenant, scope, created, revoked. Never the keys.', settings: STORE },
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
  usage: {
    usage: 'bucketmeter usage --tenant NAME --from T --to T [--granularity G] [--timeZone Z] [--groupBy D,...] [--DIMENSION V ...] [--csv | --json] [store settings]',
    about: 'The GET /v1/usage answer for a tenant (every page), as a table, CSV or JSON; flags are the API parameters, filters repeatable.',
    flags: [
      ...QUERY_FLAGS,
      ['--csv, --json', 'output format (default a table)'],
    ],
    settings: STORE,
  },
  costs: {
    usage: 'bucketmeter costs --tenant NAME --from T --to T [--granularity G] [--timeZone Z] [--groupBy D,...] [--DIMENSION V ...] [--csv | --json | --focus] [store settings] [--prices DIR] [--bucket-plans FILE]',
    about: 'The GET /v1/costs answer for a tenant (every page), as a table, CSV, JSON, or FOCUS CSV of the fine rows; flags are the API parameters, filters repeatable.',
    flags: [
      ...QUERY_FLAGS,
      ['--csv, --json, --focus', 'output format (default a table); --focus: FinOps FOCUS 1.2 CSV'],
    ],
    settings: [...STORE, 'prices', 'bucketPlans'],
  },
  'usage verify': {
    usage: 'bucketmeter usage verify --from DAY --to DAY [--tenant NAME] [store settings]',
    about: 'Checks, per UTC day, that receipts add up and equal the events stored, and that every rollup equals the events; exit 1 on any difference.',
    flags: [['--from DAY, --to DAY', 'UTC midnights (required)'], ['--tenant NAME', 'only this tenant (default: every tenant)']],
    settings: STORE,
  },
  'usage rebuild': {
    usage: 'bucketmeter usage rebuild --from T --to T [--tenant NAME] [store settings]',
    about: 'Recomputes the rollups of a range from the stored events; safe while ingestion runs.',
    flags: [['--from T, --to T', 'whole hours (required)'], ['--tenant NAME', 'only this tenant (default: every tenant)']],
    settings: STORE,
  },
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
