/**
 * Every setting in one place: flag, environment twin, default, meaning. The README's configuration
 * table is generated from SETTINGS, and `loadConfig` reports every invalid setting at once.
 */
import { isIP } from 'node:net';

type Kind = 'int' | 'string' | 'bool';

interface Setting {
  readonly flag: string;
  readonly env: string;
  readonly kind: Kind;
  readonly default: number | string | boolean | undefined;
  readonly doc: string;
  readonly min?: number;
  readonly max?: number;
}

const MiB = 1024 * 1024;
/**
 * The least --cost-heap-mb (0, automatic, aside): the cost thread's own 16 MB, and bounds derived
 * from it (206k quantities, 181k kept fine rows, 19k kept answer rows) that still price and keep a
 * small month (300 customers, 22k quantities, priced in 16 MB; docs/BENCHMARKS.md "The cost
 * thread's memory bounds").
 */
export const MIN_COST_HEAP_MB = 128;

export const SETTINGS = {
  port: { flag: 'port', env: 'PORT', kind: 'int', default: 8080, min: 0, max: 65535, doc: 'TCP port to listen on (0 = any free port).' },
  host: { flag: 'host', env: 'HOST', kind: 'string', default: '0.0.0.0', doc: 'Address to listen on: an IP address or a host name.' },
  metricsPort: { flag: 'metrics-port', env: 'BUCKETMETER_METRICS_PORT', kind: 'int', default: undefined, min: 0, max: 65535, doc: 'Serve /metrics on a listener of its own on this port (0 = any free port) instead of on the API port.' },
  dataDir: { flag: 'data-dir', env: 'BUCKETMETER_DATA_DIR', kind: 'string', default: './data', doc: 'Folder of the embedded SQLite database (used when no database URL is given).' },
  databaseUrl: { flag: 'database-url', env: 'DATABASE_URL', kind: 'string', default: undefined, doc: 'A `postgres://` URL selects the PostgreSQL store instead of embedded SQLite.' },
  pgPoolMax: { flag: 'pg-pool-max', env: 'BUCKETMETER_PG_POOL_MAX', kind: 'int', default: 8, min: 1, doc: 'Most PostgreSQL connections per process.' },
  workers: { flag: 'workers', env: 'BUCKETMETER_WORKERS', kind: 'int', default: 1, min: 1, doc: 'HTTP worker processes (node:cluster); more than 1 needs PostgreSQL.' },
  tlsCert: { flag: 'tls-cert', env: 'BUCKETMETER_TLS_CERT', kind: 'string', default: undefined, doc: 'PEM certificate file: serve HTTPS directly (with --tls-key).' },
  tlsKey: { flag: 'tls-key', env: 'BUCKETMETER_TLS_KEY', kind: 'string', default: undefined, doc: 'PEM private key file for --tls-cert.' },
  maxBatchEvents: { flag: 'max-batch-events', env: 'BUCKETMETER_MAX_BATCH_EVENTS', kind: 'int', default: 10000, min: 1, doc: 'Most events in one batch request (more: 413).' },
  maxBodyBytes: { flag: 'max-body-bytes', env: 'BUCKETMETER_MAX_BODY_BYTES', kind: 'int', default: 10 * MiB, min: 1024, doc: 'Largest request body, after decompression (more: 413).' },
  maxFutureSeconds: { flag: 'max-future-seconds', env: 'BUCKETMETER_MAX_FUTURE_SECONDS', kind: 'int', default: 900, min: 0, doc: 'How far ahead of server time an event timestamp may be.' },
  maxExtraBytes: { flag: 'max-extra-bytes', env: 'BUCKETMETER_MAX_EXTRA_BYTES', kind: 'int', default: 4096, min: 0, doc: "Size bound of an event's unknown extra fields (as JSON)." },
  queueMaxEvents: { flag: 'queue-max-events', env: 'BUCKETMETER_QUEUE_MAX_EVENTS', kind: 'int', default: 50000, min: 1, doc: 'Events waiting for commit before new writes get 503 + Retry-After.' },
  commitMaxEvents: { flag: 'commit-max-events', env: 'BUCKETMETER_COMMIT_MAX_EVENTS', kind: 'int', default: 10000, min: 1, doc: 'Most events in one group commit.' },
  quarantineMaxBytes: { flag: 'quarantine-max-bytes', env: 'BUCKETMETER_QUARANTINE_MAX_BYTES', kind: 'int', default: 1 * MiB, min: 1024, doc: 'Most bytes of one rejected input kept in quarantine (the rest is cut, and marked so).' },
  quarantineRetentionDays: { flag: 'quarantine-retention-days', env: 'BUCKETMETER_QUARANTINE_RETENTION_DAYS', kind: 'int', default: 30, min: 0, doc: 'Quarantine entries older than this are deleted (0 = keep for ever).' },
  quarantineMaxPerDay: { flag: 'quarantine-max-per-day', env: 'BUCKETMETER_QUARANTINE_MAX_PER_DAY', kind: 'int', default: 100000, min: 0, doc: 'Most quarantine entries one tenant may add per UTC day (0 = no limit); past it, inputs that would be quarantined get 429 BM_ERR_QUARANTINE_QUOTA.' },
  batchReplyMaxRejected: { flag: 'batch-reply-max-rejected', env: 'BUCKETMETER_BATCH_REPLY_MAX_REJECTED', kind: 'int', default: 100, min: 1, doc: 'Most rejected events a batch reply details (the first ones); `rejectedCount` gives them all.' },
  rateLimit: { flag: 'rate-limit', env: 'BUCKETMETER_RATE_LIMIT', kind: 'int', default: 0, min: 0, doc: 'Requests per second allowed per API key (0 = no limit). Over it: 429 + Retry-After.' },
  keyCacheSeconds: { flag: 'key-cache-seconds', env: 'BUCKETMETER_KEY_CACHE_SECONDS', kind: 'int', default: 2, min: 0, doc: 'How long a key lookup is cached; a revoked key stops working within this time.' },
  readBudgetMs: { flag: 'read-budget-ms', env: 'BUCKETMETER_READ_BUDGET_MS', kind: 'int', default: 2000, min: 100, doc: 'SQLite: how long a filtered or large event listing (`/v1/events`) may take on its reader thread, waiting for one included; past it 503 BM_ERR_QUERY_TIMEOUT.' },
  requestTimeoutMs: { flag: 'request-timeout-ms', env: 'BUCKETMETER_REQUEST_TIMEOUT_MS', kind: 'int', default: 30000, min: 1000, doc: 'A request (headers and body) must arrive within this time.' },
  costHeapMb: { flag: 'cost-heap-mb', env: 'BUCKETMETER_COST_HEAP_MB', kind: 'int', default: 0, min: 0, doc: "Memory of the cost thread, in MB, where months are priced and kept: its bounds are derived from it (quantities one request may price, fine rows and answer rows kept; README \"Speed: runs and kept months\"), and its V8 heap is this less the typed arrays those bounds allow. At least 128; 0: half of the machine's memory (or of its container's limit, where lower), never less than Node's own default heap." },
  usageKeptRows: { flag: 'usage-kept-rows', env: 'BUCKETMETER_USAGE_KEPT_ROWS', kind: 'int', default: 1_000_000, min: 0, doc: 'Rows of computed /v1/usage answers a process keeps for asking again and for next pages (about 50 bytes each; a tenant at most half); 0 keeps none.' },
  accessLog: { flag: 'access-log', env: 'BUCKETMETER_ACCESS_LOG', kind: 'bool', default: false, doc: 'One log line per request: method, route, status, tenant, duration, bytes in and out (never a key).' },
  prices: { flag: 'prices', env: 'BUCKETMETER_PRICES', kind: 'string', default: undefined, doc: 'Folder of extra price-plan files (`*.json`): each adds a plan, or replaces the shipped version with the same `id` and `validFrom`.' },
  bucketPlans: { flag: 'bucket-plans', env: 'BUCKETMETER_BUCKET_PLANS', kind: 'string', default: undefined, doc: 'JSON file `{"buckets": {name: planId}, "providers": {provider: planId}}`: which plan prices which bucket.' },
  logLevel: { flag: 'log-level', env: 'LOG_LEVEL', kind: 'string', default: 'info', doc: 'pino log level: fatal, error, warn, info, debug, trace, silent.' },
} as const satisfies Record<string, Setting>;

type SettingName = keyof typeof SETTINGS;
type ValueOf<S extends Setting> = S['kind'] extends 'int' ? number : S['kind'] extends 'bool' ? boolean : string;

export type Config = {
  [K in SettingName]: (typeof SETTINGS)[K]['default'] extends undefined
    ? ValueOf<(typeof SETTINGS)[K]> | undefined
    : ValueOf<(typeof SETTINGS)[K]>;
};

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
  }
}

/** Flags for node:util parseArgs, derived from SETTINGS. */
export function settingFlags(): Record<string, { type: 'string' | 'boolean' }> {
  return Object.fromEntries(Object.values(SETTINGS).map((s: Setting) => [s.flag, { type: s.kind === 'bool' ? ('boolean' as const) : ('string' as const) }]));
}

const BOOLEANS: Record<string, boolean> = { '1': true, true: true, yes: true, on: true, '0': false, false: false, no: false, off: false };

/** A host name as RFC 1123 allows it (labels of letters, digits and inner hyphens), or an IP address. */
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;

/** Resolves every setting: flag, else environment variable, else default. */
export function loadConfig(flags: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): Config {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(SETTINGS) as [SettingName, Setting][]) {
    const flagValue = flags[s.flag];
    if (typeof flagValue === 'boolean') {
      out[name] = flagValue;
      continue;
    }
    const raw = typeof flagValue === 'string' ? flagValue : env[s.env];
    if (raw === undefined || raw === '') {
      out[name] = s.default;
      continue;
    }
    if (s.kind === 'int') {
      const n = Number(raw);
      if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || (s.min !== undefined && n < s.min) || (s.max !== undefined && n > s.max)) {
        const range = s.max !== undefined ? ` from ${s.min ?? 0} to ${s.max}` : s.min !== undefined ? ` >= ${s.min}` : '';
        problems.push(`--${s.flag} / ${s.env}: expected an integer${range}, got "${raw}"`);
        continue;
      }
      out[name] = n;
    } else if (s.kind === 'bool') {
      const value = BOOLEANS[raw.trim().toLowerCase()];
      if (value === undefined) {
        problems.push(`--${s.flag} / ${s.env}: expected true or false (1/0, yes/no, on/off), got "${raw}"`);
        continue;
      }
      out[name] = value;
    } else {
      out[name] = raw;
    }
  }
  const config = out as Config;
  if ((config.tlsCert === undefined) !== (config.tlsKey === undefined)) {
    problems.push('--tls-cert and --tls-key go together: give both or neither');
  }
  if (config.databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(config.databaseUrl)) {
    problems.push(`--database-url / DATABASE_URL: expected a postgres:// URL, got "${redactUrl(config.databaseUrl)}"`);
  }
  if (config.workers > 1 && config.databaseUrl === undefined) {
    problems.push('--workers above 1 needs PostgreSQL (--database-url): the embedded SQLite store has one writer');
  }
  if (!isIP(config.host) && !HOST_NAME.test(config.host)) {
    problems.push(`--host / HOST: expected an IP address or a host name, got "${config.host}"`);
  }
  if (config.metricsPort !== undefined && config.metricsPort !== 0 && config.metricsPort === config.port) {
    problems.push(`--metrics-port must differ from --port (${config.port}); leave it out to serve /metrics on the API port`);
  }
  if (config.costHeapMb !== 0 && config.costHeapMb < MIN_COST_HEAP_MB) {
    problems.push(`--cost-heap-mb / BUCKETMETER_COST_HEAP_MB: expected 0 (half of the memory) or at least ${MIN_COST_HEAP_MB} (MB), got ${config.costHeapMb}: less prices too little to be of use`);
  }
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(config.logLevel)) {
    problems.push(`--log-level / LOG_LEVEL: expected fatal|error|warn|info|debug|trace|silent, got "${config.logLevel}"`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** A database URL with its password hidden, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@');
}
