// Talking to the server: the key from sessionStorage as X-API-Key, problem+json turned into errors
// with a message for people (no answer at all is another error), and which optional endpoints this
// server offers.

const KEY = 'bucketmeter.apiKey';

export function getKey() {
  return sessionStorage.getItem(KEY);
}

export function setKey(key) {
  sessionStorage.setItem(KEY, key);
}

export function clearKey() {
  sessionStorage.removeItem(KEY);
}

export class ApiError extends Error {
  /** `retryAfter`: the reply's Retry-After, in seconds (undefined without one). */
  constructor(status, problem, retryAfter = undefined) {
    super(problem?.detail ?? `HTTP ${status}`);
    this.status = status;
    this.code = problem?.code;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }
}

/** No answer: the server is down or restarting, or the connection was cut (nothing was refused). */
export class Unreachable extends Error {
  constructor(cause) {
    super('The server could not be reached: no answer came (it may be stopped or restarting, or the network is down). Check that bucketmeter is running at this address, then retry.', { cause });
  }
}

/** A fetch's failure as thrown: a network failure (a TypeError) as Unreachable; an AbortError as it is. */
function unreached(error) {
  return error instanceof TypeError ? new Unreachable(error) : error;
}

/** What a failed read means for the person at the keyboard, in a panel or a view. */
export function failureMessage(error) {
  if (!(error instanceof ApiError)) return error instanceof Unreachable ? error.message : `Something went wrong: ${error.message}`;
  if (error.status < 500) return `The server refused this: ${error.message}`;
  // It could not answer (a read over its time budget, the cost thread out of memory): its problem says why.
  return error.problem?.title ? `${error.problem.title}: ${error.message}` : `The server could not answer this (HTTP ${error.status}).`;
}

/** What a sign-in failure means for the person at the keyboard. */
export function signInMessage(error) {
  if (error.code === 'BM_ERR_AUTH_MISSING_KEY') return 'Paste an API key to sign in.';
  if (error.code === 'BM_ERR_AUTH_INVALID_KEY') return 'This key was not accepted: it is unknown or revoked. Check that it was copied whole.';
  if (error.code === 'BM_ERR_AUTH_SCOPE') return 'This key may only send events (ingest scope). The dashboard needs a key with the read or all scope: bucketmeter keys create --scope read.';
  return `Sign-in failed: ${error.message}`;
}

/**
 * GET a /v1 path with query parameters (arrays repeat the parameter); JSON back. `signal` aborts it
 * (the view that asked was left): the fetch rejects with an AbortError, and the server, its
 * connection closed, drops the read.
 */
export async function get(path, params = {}, signal) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === null) continue;
    for (const v of Array.isArray(value) ? value : [value]) query.append(name, v);
  }
  const url = query.size > 0 ? `${path}?${query}` : path;
  const response = await fetch(url, { headers: { 'x-api-key': getKey() ?? '', accept: 'application/json' }, signal }).catch((error) => {
    throw unreached(error);
  });
  let body;
  try {
    body = await response.json();
  } catch (error) {
    // A reply that is not JSON (a proxy's error page) still has its status; a body cut off is no answer.
    if (!(error instanceof SyntaxError)) throw unreached(error);
  }
  if (!response.ok) {
    const retryAfter = Number.parseInt(response.headers.get('retry-after') ?? '', 10);
    throw new ApiError(response.status, body, Number.isFinite(retryAfter) ? retryAfter : undefined);
  }
  return body;
}

/** Every page of a listing, up to `max` rows. */
export async function all(path, params, field, signal = undefined, max = 100_000) {
  const rows = [];
  let cursor;
  do {
    const page = await get(path, { ...params, ...(cursor ? { cursor } : {}) }, signal);
    rows.push(...page[field]);
    cursor = page.nextCursor;
  } while (cursor && rows.length < max);
  return rows;
}

let features;

/** The optional endpoints this server has, from its OpenAPI document (read once). */
export async function serverFeatures() {
  features ??= fetch('/openapi.json')
    .then((r) => r.json())
    .catch((error) => {
      // Asked again on the next render (a retry), rather than failing every view until a reload.
      features = undefined;
      throw unreached(error);
    })
    .then((doc) => {
      const paths = doc.paths ?? {};
      const usage = paths['/v1/usage']?.get ?? {};
      const usageRow = usage.responses?.['200']?.content?.['application/json']?.schema?.properties?.rows?.items?.properties ?? {};
      return {
        costs: '/v1/costs' in paths,
        objects: '/v1/objects' in paths,
        storage: 'storedBytes' in usageRow,
        // A server whose stored-bytes measures are asked for with storage=true.
        storageParam: (usage.parameters ?? []).some((p) => p.name === 'storage' && p.in === 'query'),
      };
    });
  return features;
}
