/**
 * `bucketmeter serve | keys | quarantine`. Every command works against either store: the same
 * settings (flags or environment) pick SQLite or PostgreSQL.
 */
import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { generateKey } from '../auth/keys.js';
import { tenantNameProblem } from '../auth/tenant-name.js';
import type { Config } from '../config.js';
import { ConfigError, loadConfig, settingFlags } from '../config.js';
import { formatTimestamp } from '../events/timestamp.js';
import { listenMetrics } from '../http/metrics.js';
import { clusterScraper } from '../metrics/cluster.js';
import { loadPricing } from '../pricing/setup.js';
import { pricesCommand } from './prices.js';
import { replayQuarantine } from '../quarantine/replay.js';
import { bodyText } from '../quarantine/service.js';
import { bootstrapKey, createCommitter, createLogger, createValidator, openStore, startNode } from '../runtime.js';
import { setupMessage } from '../setup-error.js';
import { KEY_SCOPES } from '../store/types.js';
import type { KeyScope, QuarantineEntry, Store } from '../store/types.js';
import { helpFor, USAGE } from './help.js';
import { preflight } from './preflight.js';
import { terminalSafe, terminalSafeJson } from './terminal-safe.js';
import { printTable } from './table.js';
import { CliUsageError, USAGE_FLAGS, usageCommand } from './usage.js';
import { costsCommand } from './costs.js';

class UsageError extends Error {}

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...settingFlags(),
      ...USAGE_FLAGS,
      tenant: { type: 'string' },
      scope: { type: 'string' },
      all: { type: 'boolean' },
      limit: { type: 'string' },
      'oldest-first': { type: 'boolean' },
      init: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
  });
  const [command, sub, arg] = positionals;
  if (values.version) {
    process.stdout.write(`bucketmeter ${packageVersion()}\n`);
    return 0;
  }
  if (values.help) {
    process.stdout.write(helpFor(positionals) + '\n');
    return 0;
  }
  if (command === undefined) {
    process.stdout.write(USAGE + '\n');
    return 2;
  }
  if (!['serve', 'keys', 'quarantine', 'prices', 'usage', 'costs'].includes(command)) throw new UsageError(`unknown command "${command}"`);
  // Filters repeat (arrays); settings never do.
  const config = loadConfig(Object.fromEntries(Object.entries(values).filter(([, v]) => !Array.isArray(v))) as Record<string, string | boolean>, process.env);
  const tenantProblem = command === 'keys' && sub === 'create' && values.tenant !== undefined ? tenantNameProblem(values.tenant) : undefined;
  if (tenantProblem !== undefined) throw new UsageError(tenantProblem);
  switch (command) {
    case 'serve':
      loadPricing(config); // refuse to start on a bad price catalogue, before opening the store
      return serve(config);
    case 'prices': {
      const code = pricesCommand(loadPricing(config), sub, arg, printTable);
      if (code < 0) throw new UsageError('prices needs list or show');
      return code;
    }
    case 'keys':
      return withStore(config, sub === 'create' && values.init === true, (store) => keys(store, sub, arg, values.tenant, values.scope));
    case 'usage':
      return withStore(config, false, (store) => usageCommand(store, sub, values, (name) => tenantIdsOf(store, name)));
    case 'costs': {
      if (sub !== undefined) throw new UsageError('costs takes no subcommand');
      const pricing = loadPricing(config);
      return withStore(config, false, (store) => costsCommand(store, pricing, values, async (name) => (await tenantIdOf(store, name))!));
    }
    default:
      return withStore(config, false, (store) => quarantine(store, config, sub, arg, values));
  }
}

function packageVersion(): string {
  // dist/src/cli/main.js → the package's own package.json.
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

async function withStore(config: Config, create: boolean, run: (store: Store) => Promise<number>): Promise<number> {
  const store = await openStore(config, createLogger('warn', 2), { create });
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

async function serve(config: Config): Promise<number> {
  // Cluster workers were checked by their primary; their port is the primary's to share.
  if (cluster.isPrimary) await preflight(config);
  const logger = createLogger(config.logLevel);
  if (config.workers > 1 && cluster.isPrimary) return servePrimary(config, logger);
  const store = await openStore(config, logger);
  if (cluster.isPrimary) await announceBootstrapKey(store);
  const node = await startNode(config, logger, store);
  const address = node.app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  logger.info({ port, store: store.backend, tls: Boolean(config.tlsCert), pid: process.pid }, 'bucketmeter listening');
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'stopping: no new requests, flushing commits');
      node.close().then(resolve, (err: unknown) => {
        logger.error({ err }, 'error while stopping');
        resolve();
      });
    };
    process.once('SIGTERM', stop).once('SIGINT', stop);
  });
  logger.info('stopped');
  // A cluster worker's IPC channel would keep it alive after a clean stop.
  if (cluster.isWorker) process.disconnect();
  return 0;
}

async function announceBootstrapKey(store: Store): Promise<void> {
  const key = await bootstrapKey(store);
  if (key === undefined) return;
  // Printed on stdout once, on purpose, outside the logger: this is the quickstart's only key.
  process.stdout.write(`\nNo API key existed: created tenant "default" with this key (shown once, store it now):\n\n  ${key}\n\n`);
}

async function servePrimary(config: Config, logger: ReturnType<typeof createLogger>): Promise<number> {
  const store = await openStore(config, logger); // applies migrations once before the workers start
  await announceBootstrapKey(store);
  await store.close();
  // The workers' metrics are summed here, for a scrape on either listener.
  const scrape = clusterScraper();
  const metricsServer = config.metricsPort === undefined ? undefined : await listenMetrics({ port: config.metricsPort, host: config.host, scrape });
  if (metricsServer !== undefined) logger.info({ port: (metricsServer.address() as AddressInfo).port, workers: config.workers }, 'metrics listening');
  let stopping = false;
  const fork = () => cluster.fork();
  for (let i = 0; i < config.workers; i++) fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    logger.error({ pid: worker.process.pid, code, signal }, 'worker died; starting another');
    fork();
  });
  await new Promise<void>((resolve) => {
    const stop = () => {
      stopping = true;
      metricsServer?.close();
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
      cluster.on('exit', () => {
        if (Object.keys(cluster.workers ?? {}).length === 0) resolve();
      });
    };
    process.once('SIGTERM', stop).once('SIGINT', stop);
  });
  return 0;
}

async function keys(store: Store, sub: string | undefined, arg: string | undefined, tenant: string | undefined, scopeText: string | undefined): Promise<number> {
  const now = Math.floor(Date.now() / 1000);
  switch (sub) {
    case 'create': {
      if (tenant === undefined) throw new UsageError('keys create needs --tenant NAME');
      const scope = (scopeText ?? 'all') as KeyScope;
      if (!KEY_SCOPES.includes(scope)) throw new UsageError(`--scope takes ${KEY_SCOPES.join(', ')}`);
      const generated = generateKey();
      await store.keys.create({ id: generated.id, tenantName: tenant, hash: generated.hash, scope, createdAt: now });
      process.stdout.write(generated.key + '\n');
      process.stderr.write(`created ${scope} key ${generated.id} for tenant "${tenant}" (the key is shown once)\n`);
      return 0;
    }
    case 'list': {
      const rows = await store.keys.list();
      printTable(
        ['ID', 'TENANT', 'SCOPE', 'CREATED', 'REVOKED'],
        rows.map((k) => [k.id, k.tenantName, k.scope, formatTimestamp(k.createdAt), k.revokedAt === null ? '-' : formatTimestamp(k.revokedAt)]),
      );
      return 0;
    }
    case 'revoke': {
      if (!arg) throw new UsageError('keys revoke needs a key ID (see keys list)');
      if (await store.keys.revoke(arg, now)) {
        process.stdout.write(`revoked ${arg}\n`);
        return 0;
      }
      process.stderr.write(`no active key with id ${arg}\n`);
      return 1;
    }
    default:
      throw new UsageError('keys needs create, list or revoke');
  }
}

async function tenantIdOf(store: Store, name: string | undefined): Promise<number | undefined> {
  if (name === undefined) return undefined;
  const key = (await store.keys.list()).find((k) => k.tenantName === name);
  if (key === undefined) throw new UsageError(`no tenant named ${terminalSafe(JSON.stringify(name))}`);
  return key.tenantId;
}

/** The tenant named, or every tenant that has a key. */
async function tenantIdsOf(store: Store, name: string | undefined): Promise<number[]> {
  if (name !== undefined) return [(await tenantIdOf(store, name))!];
  return [...new Set((await store.keys.list()).map((k) => k.tenantId))];
}

async function quarantine(store: Store, config: Config, sub: string | undefined, arg: string | undefined, values: { tenant?: string; all?: boolean; limit?: string; 'oldest-first'?: boolean }): Promise<number> {
  const tenantId = await tenantIdOf(store, values.tenant);
  const scope = { includeReplayed: values.all === true, ...(tenantId === undefined ? {} : { tenantId }) };
  switch (sub) {
    case 'list': {
      const limit = values.limit === undefined ? 100 : Number(values.limit);
      if (!Number.isSafeInteger(limit) || limit < 1) throw new UsageError('--limit takes a positive integer');
      const rows = await store.quarantine.list({ ...scope, limit, newestFirst: values['oldest-first'] !== true });
      printTable(
        ['ID', 'RECEIVED', 'TENANT', 'CODE', 'SOURCE', 'INDEX', 'FIRST ERROR'],
        rows.map((q) => [String(q.id), formatTimestamp(q.receivedAt), q.tenantName, q.code, q.source, q.index === undefined ? '-' : String(q.index), firstError(q)]),
      );
      return 0;
    }
    case 'show': {
      const entry = arg === undefined ? undefined : await store.quarantine.get(Number(arg));
      if (entry === undefined) {
        process.stderr.write(`no quarantine entry ${arg ?? ''}\n`);
        return 1;
      }
      process.stdout.write(terminalSafeJson(JSON.stringify(exportable(entry), null, 2)) + '\n');
      return 0;
    }
    case 'export': {
      let afterId = 0;
      for (;;) {
        const rows = await store.quarantine.list({ ...scope, afterId, limit: 500 });
        if (rows.length === 0) return 0;
        for (const q of rows) process.stdout.write(terminalSafeJson(JSON.stringify(exportable(q))) + '\n');
        afterId = rows[rows.length - 1]!.id;
      }
    }
    case 'replay': {
      const committer = createCommitter(config, createLogger('warn', 2), store);
      try {
        const scope = tenantId === undefined ? {} : { tenantId };
        const result = await replayQuarantine({ quarantine: store.quarantine, committer, validator: createValidator(config), quarantineMaxBytes: config.quarantineMaxBytes, ...scope });
        process.stdout.write(JSON.stringify(result) + '\n');
      } finally {
        await committer.close();
      }
      return 0;
    }
    default:
      throw new UsageError('quarantine needs list, show, export or replay');
  }
}

function firstError(q: QuarantineEntry): string {
  const e = q.errors[0];
  return e === undefined ? '' : `${e.path || '(body)'}: ${e.message}`.slice(0, 80);
}

function exportable(q: QuarantineEntry): Record<string, unknown> {
  const body = bodyText(q.body);
  return {
    id: q.id,
    tenant: q.tenantName,
    receivedAt: formatTimestamp(q.receivedAt),
    code: q.code,
    source: q.source,
    ...(q.index === undefined ? {} : { index: q.index }),
    errors: q.errors,
    body: body.text,
    bodyEncoding: body.encoding,
    truncated: q.truncated,
    replayedAt: q.replayedAt === null ? null : formatTimestamp(q.replayedAt),
  };
}

export function runCli(): void {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      const setup = setupMessage(error);
      if (setup !== undefined) {
        process.stderr.write(`bucketmeter: ${setup}\n`);
        process.exitCode = 1;
        return;
      }
      if (error instanceof ConfigError || error instanceof UsageError || error instanceof CliUsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
        const hint = error instanceof ConfigError ? '' : ' (see bucketmeter --help)';
        // parseArgs explains some mistakes over several lines: one line is easier to read in a log.
        const message = error instanceof ConfigError ? error.message : (error as Error).message.replace(/\n/g, ' ');
        process.stderr.write(`bucketmeter: ${message}${hint}\n`);
        process.exitCode = 2;
      } else {
        process.stderr.write(`bucketmeter: ${(error as Error).stack ?? String(error)}\n`);
        process.exitCode = 1;
      }
    },
  );
}
