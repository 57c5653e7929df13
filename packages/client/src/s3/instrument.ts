/**
 * instrumentS3: two middlewares on an AWS SDK v3 S3Client. The outer one (initialize step, first)
 * reads the attribution when the call starts and, once the whole call succeeded (retries
 * included), turns it into one event; the inner one (deserialize step) keeps the HTTP request of
 * the attempt that succeeded, whose headers say how many bytes were really sent and whose host
 * names the provider. Typed structurally, so the SDK stays an optional peer dependency.
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

const SENT = Symbol('bucketmeter.sentRequest');
/** The SDK's per-call context, shared by every middleware of one call. */
interface CallContext {
  commandName?: string;
  [SENT]?: HttpRequestLike;
}

export function instrumentS3(client: { middlewareStack: unknown }, meter: BucketmeterClient, options: InstrumentOptions = {}): void {
  const emit: Middleware = (next, smithyContext) => async (args) => {
    const context = smithyContext as CallContext;
    const attribution = currentAttribution();
    const result = await next(args);
    try {
      const event = toEvent(context.commandName ?? '', args.input, result, context[SENT], attribution, options);
      if (event !== undefined) meter.track(event);
    } catch (error) {
      // Metering must never fail the user's S3 call.
      meter.reportError({ kind: 'instrumentation', message: `bucketmeter: no event for ${String(context.commandName)}: ${String(error)}`, cause: error });
    }
    return result;
  };
  const capture: Middleware = (next, context) => async (args) => {
    const result = await next(args);
    (context as CallContext)[SENT] = args.request as HttpRequestLike;
    return result;
  };
  // Same names with override: instrumenting a client twice replaces, never doubles.
  const stack = client.middlewareStack as MiddlewareStackLike;
  stack.add(emit, { step: 'initialize', name: 'bucketmeterEmit', priority: 'high', override: true });
  stack.add(capture, { step: 'deserialize', name: 'bucketmeterCapture', priority: 'high', override: true });
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
  // No status: a presigner ran the stack without sending anything. Not 2xx: the call failed.
  if (status === undefined || status < 200 || status > 299 || request === undefined) return undefined;
  const action = commandName.endsWith('Command') ? commandName.slice(0, -'Command'.length) : commandName;
  const fields = extractFields(action, { input: input as Record<string, unknown>, output: result.output as Record<string, unknown>, requestHeaders: lowerCased(request.headers ?? {}) });
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

function lowerCased(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) out[name.toLowerCase()] = headers[name]!;
  return out;
}
