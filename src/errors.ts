/**
 * Every error bucketmeter answers with: a stable code, the HTTP status, a title, and what the caller
 * should do. Problem+json bodies (RFC 9457) carry the code; the README's Errors table lists them (test/docs.test.ts checks it).
 */
import type { FieldError } from './events/field-error.js';

export const ERRORS = {
  BM_ERR_AUTH_MISSING_KEY: { status: 401, title: 'API key missing', hint: 'Send your API key in the X-API-Key header.' },
  BM_ERR_AUTH_INVALID_KEY: { status: 401, title: 'API key invalid', hint: 'The key is unknown or revoked. Check X-API-Key, or create a key with `bucketmeter keys create`.' },
  BM_ERR_AUTH_SCOPE: { status: 403, title: 'API key scope does not allow this', hint: 'This key\'s scope does not cover this path: `ingest` keys may send events, `read` keys may use /v1/*. Use a key of the right scope (`bucketmeter keys create --scope`).' },
  BM_ERR_EVENT_INVALID: { status: 400, title: 'Event invalid', hint: 'Fix the fields listed in `errors`. The event was kept in quarantine.' },
  BM_ERR_EVENT_UNMAPPED: { status: 400, title: 'Operation the client could not map', hint: 'The collector sent action "Unknown" (an S3 operation it does not know, named by `classNames`). The event was kept in quarantine under this code.' },
  BM_ERR_BODY_INVALID_JSON: { status: 400, title: 'Body is not valid JSON', hint: 'Send a UTF-8 JSON document. The body was kept in quarantine.' },
  BM_ERR_BODY_NOT_OBJECT: { status: 400, title: 'Body is not a JSON object', hint: 'Send one event as a JSON object, or use the batch path for an array.' },
  BM_ERR_BODY_NOT_ARRAY: { status: 400, title: 'Body is not a JSON array', hint: 'The batch path takes a JSON array of events.' },
  BM_ERR_BODY_BAD_ENCODING: { status: 400, title: 'Body cannot be decoded', hint: 'The body is not valid for its Content-Encoding (gzip or deflate).' },
  BM_ERR_BODY_TOO_LARGE: { status: 413, title: 'Body too large', hint: 'Split the batch: the decompressed body exceeds the limit.' },
  BM_ERR_BATCH_TOO_MANY_EVENTS: { status: 413, title: 'Too many events in batch', hint: 'Split the batch: it holds more events than the limit.' },
  BM_ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type', hint: 'Send Content-Type: application/json.' },
  BM_ERR_UNSUPPORTED_ENCODING: { status: 415, title: 'Unsupported content encoding', hint: 'Use Content-Encoding gzip, deflate or none.' },
  BM_ERR_QUERY_INVALID: { status: 400, title: 'Query parameter invalid', hint: 'Fix the query parameters listed in `errors`.' },
  BM_ERR_QUERY_TIMEOUT: { status: 503, title: 'Query took too long', hint: 'The read was stopped at its time budget (time spent waiting for a reader included). Narrow it (a from/to range, a smaller limit) or retry later.' },
  BM_ERR_COST_TOO_LARGE: { status: 422, title: 'Too many quantities to price', hint: 'Cost prices each provider account\'s whole month at attribution key × hour; past a bound per request it refuses rather than exhaust the node\'s memory. The same request is refused again: filter by provider, or see README "Cost".' },
  BM_ERR_COST_NOT_READY: { status: 503, title: 'Costs not priced yet', hint: 'A month is priced whole the first time it is asked for after it changed, minutes on a large store; the pricing goes on after this answer, and the month is kept once priced. Ask again after the Retry-After seconds (README "Cost").' },
  BM_ERR_COST_OUT_OF_MEMORY: { status: 503, title: 'Cost thread out of memory', hint: 'The cost thread ran out of its heap (--cost-heap-mb) pricing or keeping months: the costs it was answering, this request\'s among them, were stopped, and the months it kept are gone. Ask again after the Retry-After seconds; a request that meets this again is too large for the setting: ask for fewer months or a provider filter, or raise --cost-heap-mb (README "Cost").' },
  BM_ERR_ANSWER_TOO_LARGE: { status: 422, title: 'Answer too large', hint: 'Stored bytes and their cost carry on in every window, so such an answer holds a row per group and window however little changed; past a bound per request it is refused rather than exhaust the node\'s memory. The same request is refused again: ask for fewer windows (granularity, from/to) or groups (groupBy, filters); see README "Measures in /v1/usage?storage=true".' },
  BM_ERR_SUM_TOO_LARGE: { status: 422, title: 'Sum too large to answer exactly', hint: 'A sum in this answer passes what the store can add exactly (README "Exact sums"): nothing is answered rather than a wrong figure. Narrow the window (from/to) or group by more dimensions, so that each row sums less.' },
  BM_ERR_USAGE_ZONE_NOT_EXACT: { status: 400, title: 'Time zone cannot be answered exactly', hint: 'Usage is stored per UTC hour: a zone whose offset is not a whole number of hours in the range cannot have exact hour, day or month windows. Use granularity=none, UTC or a whole-hour zone.' },
  BM_ERR_NOT_FOUND: { status: 404, title: 'Not found', hint: 'No such path or method; see the README for the API.' },
  BM_ERR_QUARANTINE_QUOTA: { status: 429, title: 'Quarantine quota exceeded', hint: "This tenant's invalid inputs reached today's quarantine limit (--quarantine-max-per-day): fix the client. Requests without invalid input are still accepted; the quota renews at 00:00 UTC (Retry-After)." },
  BM_ERR_RATE_LIMITED: { status: 429, title: 'Rate limit exceeded', hint: 'Slow down; retry after the Retry-After seconds.' },
  BM_ERR_OVERLOADED: { status: 503, title: 'Server overloaded', hint: 'The write queue is full; retry after the Retry-After seconds.' },
  BM_ERR_STORE_UNAVAILABLE: { status: 503, title: 'Store unavailable', hint: 'The database cannot be reached, or cannot take writes, now; retry after the Retry-After seconds. A write the database did not answer may be stored yet: retry with the same eventIds (never stored twice).' },
  BM_ERR_SHUTTING_DOWN: { status: 503, title: 'Shutting down', hint: 'This node is stopping; retry (another node, or this one after restart).' },
  BM_ERR_CLIENT_CLOSED: { status: 499, title: 'Client closed the request', hint: 'The client closed its connection before the answer, so the reads behind it were not run, or were stopped. No client receives this reply: it is for the access log and the metrics.' },
  BM_ERR_REQUEST_TIMEOUT: { status: 408, title: 'Request timeout', hint: 'The request (headers and body) did not arrive in time.' },
  BM_ERR_BAD_REQUEST: { status: 400, title: 'Bad request', hint: 'The HTTP request is malformed.' },
  BM_ERR_HEADERS_TOO_LARGE: { status: 431, title: 'Request headers too large', hint: 'Send smaller headers: together they exceed 16 KiB.' },
  BM_ERR_EXPECTATION_FAILED: { status: 417, title: 'Expectation failed', hint: 'Send no Expect header, or Expect: 100-continue.' },
  BM_ERR_INTERNAL: { status: 500, title: 'Internal error', hint: 'A bug in bucketmeter; please report it with the log line of this request.' },
} as const satisfies Record<string, { status: number; title: string; hint: string }>;

export type ErrorCode = keyof typeof ERRORS;
/** The codes whose replies say when to ask again (Retry-After): those of status 429 and 503. */
export type RetriedCode = { [C in ErrorCode]: (typeof ERRORS)[C]['status'] extends 429 | 503 ? C : never }[ErrorCode];
/** A refusal of what was sent, the same however often it is sent: no Retry-After. */
export type RefusalCode = Exclude<ErrorCode, RetriedCode>;

/** A coded error the HTTP layer turns into problem+json; `C`, the codes it may have where that is known. */
export class BmError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = 'BmError';
  readonly status: number;
  constructor(
    readonly code: C,
    detail?: string,
    readonly extra: { errors?: FieldError[]; retryAfter?: number; [key: string]: unknown } = {},
    options?: { cause?: unknown },
  ) {
    super(detail ?? ERRORS[code].hint, options);
    this.status = ERRORS[code].status;
  }
}
