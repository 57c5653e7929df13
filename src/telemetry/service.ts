/**
 * What the hosted service's Java collector reports about itself on its /telemetry/* posts: read,
 * counted and logged for the operator, never stored. Reports carry secrets (an invalidApiKey report
 * holds the key the collector tried, several times over, and a failed ping's request headers), so
 * nothing of a report is logged as sent: only the figures and bounded tokens picked out here.
 */
import type { Logger } from 'pino';

export const TELEMETRY_KINDS = ['lifecycle', 'invalidApiKey', 'extractionIssues', 'metricsIncremental'] as const;
export type TelemetryKind = (typeof TELEMETRY_KINDS)[number];

/** Counters since start, per process; what a /metrics endpoint can expose. */
export interface TelemetryCounters {
  /** Reports read, by route. */
  reports: Record<TelemetryKind, number>;
  /** Reports that were not a JSON object (answered 400). */
  unreadable: number;
  /** Events the collectors say they dropped (their `events_dropped_*` figures of metricsIncremental). */
  collectorEventsDropped: number;
  /** Events the collectors say they could not extract cleanly (extractionIssues). */
  collectorEventsWithIssues: number;
}

export interface ReportOrigin {
  address: string;
  userAgent: string | undefined;
}

/** Tokens such as instance ids and issue types: kept only when they look like one, and short. */
const TOKEN = /^[A-Za-z0-9_.:-]{1,64}$/;
const MAX_LISTED = 10;
const MAX_USER_AGENT = 200;

export class TelemetryService {
  private readonly counts: TelemetryCounters = {
    reports: { lifecycle: 0, invalidApiKey: 0, extractionIssues: 0, metricsIncremental: 0 },
    unreadable: 0,
    collectorEventsDropped: 0,
    collectorEventsWithIssues: 0,
  };

  constructor(private readonly logger: Logger) {}

  counters(): TelemetryCounters {
    return { ...this.counts, reports: { ...this.counts.reports } };
  }

  /** Reads one report; false when the body is not a JSON object (nothing of it is logged). */
  report(kind: TelemetryKind, body: Buffer, origin: ReportOrigin): boolean {
    let report: unknown;
    try {
      report = JSON.parse(body.toString('utf8'));
    } catch {
      report = undefined;
    }
    if (typeof report !== 'object' || report === null || Array.isArray(report)) {
      this.counts.unreadable++;
      return false;
    }
    this.counts.reports[kind]++;
    const fields = report as Record<string, unknown>;
    const context = {
      telemetry: kind,
      eventType: token(fields.eventType),
      instanceId: token(fields.instanceId),
      from: origin.address,
      userAgent: origin.userAgent?.slice(0, MAX_USER_AGENT),
    };
    switch (kind) {
      case 'invalidApiKey':
        this.logger.warn({ ...context, problems: itemTypes(fields.errors) }, 'a collector reports that its API key is refused or malformed; give it a key made by `bucketmeter keys create`');
        break;
      case 'lifecycle': {
        const totals = figures(fields.metricsTotal);
        this.logger.info({ ...context, ...(totals === undefined ? {} : { metricsTotal: totals }), warnings: itemTypes(fields.warnings) }, 'collector lifecycle');
        break;
      }
      case 'extractionIssues': {
        const events = Array.isArray(fields.eventsWithIssues) ? fields.eventsWithIssues : [];
        this.counts.collectorEventsWithIssues += events.length;
        const issues = events.flatMap((e) => (isObject(e) ? [...itemTypes(e.telemetryErrors), ...itemTypes(e.telemetryWarnings)] : []));
        this.logger.warn({ ...context, events: events.length, issues: [...new Set(issues)].slice(0, MAX_LISTED) }, 'a collector could not extract some events cleanly');
        break;
      }
      case 'metricsIncremental': {
        const metrics = figures(fields.metricsIncremental) ?? {};
        const dropped = Object.entries(metrics).reduce((sum, [name, n]) => (name.startsWith('events_dropped') ? sum + n : sum), 0);
        this.counts.collectorEventsDropped += dropped;
        if (dropped > 0) this.logger.warn({ ...context, dropped, metrics }, 'a collector dropped events before they reached bucketmeter');
        else this.logger.debug({ ...context, metrics }, 'collector metrics');
        break;
      }
    }
    return true;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function token(value: unknown): string | undefined {
  return typeof value === 'string' && TOKEN.test(value) ? value : undefined;
}

/** The `type` of each telemetry item (TelemetryPayload is a list of {type, domain?, ...data}). */
function itemTypes(items: unknown): string[] {
  if (!Array.isArray(items)) return [];
  const types = items.map((item) => (isObject(item) ? token(item.type) : undefined)).filter((t): t is string => t !== undefined);
  return [...new Set(types)].slice(0, MAX_LISTED);
}

/** A map of counter name → non-negative integer, as the collector sends its metrics; others ignored. */
function figures(value: unknown): Record<string, number> | undefined {
  if (!isObject(value)) return undefined;
  // fromEntries defines own properties: a name such as __proto__ cannot reach a prototype.
  return Object.fromEntries(
    Object.entries(value)
      .slice(0, 32)
      .filter((entry): entry is [string, number] => /^[a-z_]{1,64}$/.test(entry[0]) && Number.isSafeInteger(entry[1]) && (entry[1] as number) >= 0),
  );
}
