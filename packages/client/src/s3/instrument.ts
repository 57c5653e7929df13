/**
 * instrumentS3: one middleware on an AWS SDK v3 S3Client, at the deserialize step, where the request
 * is the one sent (signed, its headers say how many bytes really went out, its host names the
 * provider) and the reply is S3's. It runs once per attempt, inside the SDK's retries: only the
 * attempt S3 answered with success becomes an event, so a call retried to success is counted once and
 * a failed one not at all. One middleware, not one per step: each entry in the stack costs every call
 * of the client a few µs (the SDK sorts and wraps its stack on every send). Typed structurally, so the
 * SDK stays an optional peer dependency.
 */
import type { BucketmeterClient } from '../client.js';
import type { Attribution, MeterEvent } from '../types.js';
import { currentAttribution } from './attribution.js';
import { extractFields } from './commands.js';
import { UNKNOWN_PROVIDER, awsRegionOfHost, providerOfHost } from './provider.js';

export interface EgressInfo {
  bucket: string | undefined;
  objectKey: string | undefined;
  bytes: number | undefined;
  provider: string;
  /** Host the request went to. */
  host: string | undefined;
  /** The bucket's AWS region, read from the host; undefined for other providers or hosts. */
  region: string | undefined;
}

export interface InstrumentOptions {
  /** Attribution of calls made outside withAttribution() (and of fields it leaves unset). */
  defaultAttribution?: Attribution;
  /** GetObject only: whether the download is billable egress; the field is left out without it (the server's default is true). */
  isBillableEgress?: (info: EgressInfo) => boolean;
  /** Provider of every call of this client, overriding the one read from the endpoint's host. */
  provider?: string;
}

interface HttpRequestLike {
  hostname?: string;
  headers?: Record<string, string>;
}
interface HttpResponseLike {
  statusCode?: number;
  headers?: Record<string, string>;
}
type Handler = (args: { input: object; request?: unknown }) => Promise<{ output: object; response: unknown }>;
type Middleware = (next: Handler, context: object) => Handler;

/** The part of an S3Client this needs; typed loosely here because the SDK's stack types are heavily overloaded. */
interface MiddlewareStackLike {
  add(middleware: Middleware, options: { step: string; name: string; priority: string; override: boolean }): void;
}

/** The SDK's per-call context, shared by every middleware of one call. */
interface CallContext {
  commandName?: string;
}

export function instrumentS3(client: { middlewareStack: unknown }, meter: BucketmeterClient, options: InstrumentOptions = {}): void {
  // Not an async function: a plain then() spares the call a promise and a tick.
  const meterCall: Middleware = (next, smithyContext) => (args) =>
    next(args).then((result) => {
      const context = smithyContext as CallContext;
      try {
        // Attribution comes from the async context of the user's send(), which the SDK's promise chain carries here.
        const event = toEvent(context.commandName ?? '', args.input, result, args.request as HttpRequestLike | undefined, currentAttribution(), options);
        if (event !== undefined) meter.track(event);
      } catch (error) {
        // Metering must never fail the user's S3 call.
        meter.reportError({ kind: 'instrumentation', message: `bucketmeter: no event for ${String(context.commandName)}: ${String(error)}`, cause: error });
      }
      return result;
    });
  // Same name with override: instrumenting a client twice replaces, never doubles.
  (client.middlewareStack as MiddlewareStackLike).add(meterCall, { step: 'deserialize', name: 'bucketmeter', priority: 'high', override: true });
}

function toEvent(
  commandName: string,
  input: object,
  result: { output: object; response: unknown },
  request: HttpRequestLike | undefined,
  attribution: Attribution | undefined,
  options: InstrumentOptions,
): MeterEvent | undefined {
  const response = result.response as HttpResponseLike | undefined;
  const status = response?.statusCode;
  // No status: nothing was sent (a presigner stops before this step, so this is only a guard). Not 2xx: the call failed.
  if (status === undefined || status < 200 || status > 299 || request === undefined) return undefined;
  const action = commandName.endsWith('Command') ? commandName.slice(0, -'Command'.length) : commandName;
  const fields = extractFields(action, { input: input as Record<string, unknown>, output: result.output as Record<string, unknown>, requestHeader: (name) => headerOf(request.headers, name) });
  if (fields === undefined) return undefined;
  const provider = options.provider ?? providerOfHost(request.hostname) ?? UNKNOWN_PROVIDER;
  // Built by assignment, not spreads: the object stays in V8's fast mode, which JSON.stringify in track() needs.
  const event: MeterEvent = { action, provider, timestamp: responseTime(response?.headers?.date) };
  assignAttribution(event, options.defaultAttribution);
  assignAttribution(event, attribution);
  for (const name in fields) event[name] = fields[name];
  if (action === 'GetObject' && options.isBillableEgress !== undefined) {
    event.isBillableEgress = options.isBillableEgress({
      bucket: event.bucket,
      objectKey: event.objectKey,
      bytes: event.bytes,
      provider,
      host: request.hostname,
      region: awsRegionOfHost(request.hostname),
    });
  }
  return event;
}

let lastDate = '';
let lastIso = '';

/**
 * The server's clock (response Date header) rather than this machine's; this machine's when absent.
 * The header changes once a second: the last conversion is kept, since parsing costs more than the rest.
 */
function responseTime(date: string | undefined): string {
  if (date === undefined) return new Date().toISOString();
  if (date !== lastDate) {
    const at = Date.parse(date);
    if (Number.isNaN(at)) return new Date().toISOString();
    lastIso = new Date(at).toISOString();
    lastDate = date;
  }
  return lastIso;
}

function assignAttribution(event: MeterEvent, from: Attribution | undefined): void {
  if (from === undefined) return;
  if (from.customerId !== undefined) event.customerId = from.customerId;
  if (from.featureId !== undefined) event.featureId = from.featureId;
  if (from.clientType !== undefined) event.clientType = from.clientType;
  if (from.clientId !== undefined) event.clientId = from.clientId;
}

/** A request header by its lower-case name; the SDK's own are lower-case, others are searched for case-insensitively. */
function headerOf(headers: Record<string, string> | undefined, lowerName: string): string | undefined {
  if (headers === undefined) return undefined;
  const exact = headers[lowerName];
  if (exact !== undefined) return exact;
  for (const name in headers) if (name.toLowerCase() === lowerName) return headers[name];
  return undefined;
}
