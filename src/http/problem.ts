/** Maps any error to an RFC 9457 problem+json reply. The one place where errors meet statuses. */
import { BmError, ERRORS } from '../errors.js';
import type { ErrorCode } from '../errors.js';
import { describeReceived, pointerToken, quoteExcerpt } from '../events/field-error.js';
import type { FieldError } from '../events/field-error.js';
import { asQueryTimeout } from '../query/timed.js';

export interface Problem {
  status: number;
  headers: Record<string, string>;
  body: {
    type: string;
    title: string;
    status: number;
    detail: string;
    code: ErrorCode;
    instance?: string;
    [extension: string]: unknown;
  };
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

/** Fastify and Node error codes that a client can cause, and what they mean to us. */
const FRAMEWORK_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'BM_ERR_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_BODY_TOO_LARGE: 'BM_ERR_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BM_ERR_BAD_REQUEST',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'BM_ERR_BODY_INVALID_JSON',
  FST_ERR_BAD_URL: 'BM_ERR_BAD_REQUEST',
  FST_ERR_ASYNC_CONSTRAINT: 'BM_ERR_BAD_REQUEST',
  ERR_STREAM_PREMATURE_CLOSE: 'BM_ERR_BAD_REQUEST',
  ECONNRESET: 'BM_ERR_BAD_REQUEST',
};

const BY_STATUS: Record<number, ErrorCode> = {
  400: 'BM_ERR_BAD_REQUEST',
  404: 'BM_ERR_NOT_FOUND',
  408: 'BM_ERR_REQUEST_TIMEOUT',
  413: 'BM_ERR_BODY_TOO_LARGE',
  415: 'BM_ERR_UNSUPPORTED_MEDIA_TYPE',
};

export function problemTypeUri(code: ErrorCode): string {
  return `urn:bucketmeter:error:${code}`;
}

export function toProblem(thrown: unknown, instance?: string): Problem {
  const error = schemaRefusal(thrown) ?? asQueryTimeout(thrown);
  const code = codeOf(error);
  const spec = ERRORS[code];
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE };
  let detail: string = spec.hint;
  const extensions: Record<string, unknown> = {};
  if (error instanceof BmError) {
    detail = error.message;
    const { retryAfter, ...rest } = error.extra;
    if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
    Object.assign(extensions, rest);
  }
  return {
    status: spec.status,
    headers,
    body: { type: problemTypeUri(code), title: spec.title, status: spec.status, detail, code, ...(instance ? { instance } : {}), ...extensions },
  };
}

function codeOf(error: unknown): ErrorCode {
  if (error instanceof BmError) return error.code;
  const e = error as { code?: unknown; statusCode?: unknown } | null;
  if (e && typeof e.code === 'string' && FRAMEWORK_CODES[e.code]) return FRAMEWORK_CODES[e.code]!;
  if (e && typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) return BY_STATUS[e.statusCode] ?? 'BM_ERR_BAD_REQUEST';
  return 'BM_ERR_INTERNAL';
}

/** What Ajv reports (verbose) for a request part that fails its route's schema. */
interface SchemaError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
  data?: unknown;
  parentSchema?: { properties?: Record<string, unknown>; maxLength?: number };
}

/** A request the route's schema refused (Fastify's FST_ERR_VALIDATION), as a coded error naming each field. */
export function schemaRefusal(error: unknown): BmError<'BM_ERR_QUERY_INVALID' | 'BM_ERR_BAD_REQUEST'> | undefined {
  const e = error as { code?: unknown; validation?: SchemaError[]; validationContext?: string } | null;
  if (e?.code !== 'FST_ERR_VALIDATION' || !Array.isArray(e.validation)) return undefined;
  const errors = e.validation.map(schemaFieldError);
  const code = e.validationContext === 'querystring' ? 'BM_ERR_QUERY_INVALID' : 'BM_ERR_BAD_REQUEST';
  return new BmError(code, errors[0]?.message, { errors });
}

function schemaFieldError(e: SchemaError): FieldError {
  if (e.keyword === 'additionalProperties') {
    const name = String(e.params.additionalProperty);
    const known = Object.keys(e.parentSchema?.properties ?? {});
    return {
      path: `/${pointerToken(name)}`,
      message: `unknown query parameter ${quoteExcerpt(name)}`,
      expected: known.length === 0 ? 'no query parameters' : `only ${known.join(', ')}`,
      received: quoteExcerpt(name),
    };
  }
  const name = e.instancePath.slice(1) || 'the query';
  if (e.keyword === 'type') {
    const received = Array.isArray(e.data) ? `${e.data.length} values` : describeReceived(e.data);
    return { path: e.instancePath, message: `${name} must be given once, as text`, expected: 'one string', received };
  }
  if (e.keyword === 'maxLength') {
    const max = e.parentSchema?.maxLength;
    return { path: e.instancePath, message: `${name} must be at most ${max} characters`, expected: `at most ${max} characters`, received: `${String(e.data).length} characters` };
  }
  return { path: e.instancePath, message: `${name} ${e.message ?? 'is not valid'}`, expected: e.message ?? 'a valid value', received: describeReceived(e.data) };
}
