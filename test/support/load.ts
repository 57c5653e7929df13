/** Concurrent load with unique eventIds, recording exactly which events the server acknowledged. */
import { minimalWireEvent } from './events.js';

export interface LoadResult {
  sent: Set<string>;
  acknowledged: Set<string>;
  statuses: Map<number, number>;
  /** Problem codes of the refusals. */
  codes: Map<string, number>;
  /** Refusals that are not problem+json, or 429/503 without Retry-After (the first few). */
  malformed: string[];
  /** Longest wait for an answer (or a network error), in milliseconds. */
  slowestMs: number;
  networkErrors: number;
  /** Every answer: when its request was sent and when the answer was read (Date.now()), status and problem code. */
  answers: Answer[];
}

export interface Answer {
  sentAt: number;
  answeredAt: number;
  status: number;
  code: string | undefined;
}

export interface LoadOptions {
  url: string;
  key: string;
  /** Concurrent connections. */
  connections: number;
  /** Every n-th request is a batch of `batchSize` events instead of a single event. */
  batchEvery: number;
  batchSize: number;
  /** Prefix making eventIds unique across runs. */
  prefix: string;
  /** Stops when this resolves (or at the first network error of every connection). */
  until: Promise<unknown>;
}

/** Sends until `until` settles or the server goes away; a 200 marks each of its events acknowledged. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const result: LoadResult = { sent: new Set(), acknowledged: new Set(), statuses: new Map(), codes: new Map(), malformed: [], slowestMs: 0, networkErrors: 0, answers: [] };
  let stop = false;
  void options.until.then(() => (stop = true), () => (stop = true));
  let counter = 0;
  const worker = async (w: number) => {
    while (!stop) {
      const n = counter++;
      const isBatch = options.batchEvery > 0 && n % options.batchEvery === 0;
      const ids = isBatch ? Array.from({ length: options.batchSize }, (_, i) => `${options.prefix}-${w}-${n}-${i}`) : [`${options.prefix}-${w}-${n}`];
      const events = ids.map((eventId) => ({ ...(minimalWireEvent('GetObject') as object), eventId, customerId: `c${n % 7}` }));
      for (const id of ids) result.sent.add(id);
      const started = Date.now();
      try {
        const response = await fetch(`${options.url}${isBatch ? '/s3/batch' : '/s3'}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': options.key },
          body: JSON.stringify(isBatch ? events : events[0]),
        });
        const text = await response.text();
        const answer: Answer = { sentAt: started, answeredAt: Date.now(), status: response.status, code: undefined };
        result.answers.push(answer);
        result.statuses.set(response.status, (result.statuses.get(response.status) ?? 0) + 1);
        if (response.status === 200) {
          if (isBatch) {
            const body = JSON.parse(text) as { accepted: number; rejected: unknown[] };
            if (body.accepted !== ids.length || body.rejected.length > 0) throw new Error(`batch not fully accepted: ${text}`);
          }
          for (const id of ids) result.acknowledged.add(id);
        } else {
          const code = /"code":"(\w+)"/.exec(text)?.[1] ?? 'none';
          answer.code = code;
          result.codes.set(code, (result.codes.get(code) ?? 0) + 1);
          const problemJson = response.headers.get('content-type')?.startsWith('application/problem+json') === true;
          const retryAfter = response.headers.get('retry-after') !== null || (response.status !== 429 && response.status !== 503);
          if ((!problemJson || !retryAfter) && result.malformed.length < 10) result.malformed.push(`${response.status} ${response.headers.get('content-type')} retry-after ${response.headers.get('retry-after')}: ${text.slice(0, 200)}`);
        }
      } catch (error) {
        if (error instanceof Error && error.message.startsWith('batch not fully')) throw error;
        result.networkErrors++;
        if (stop) return;
        await new Promise((r) => setTimeout(r, 20));
      } finally {
        result.slowestMs = Math.max(result.slowestMs, Date.now() - started);
      }
    }
  };
  await Promise.all(Array.from({ length: options.connections }, (_, w) => worker(w)));
  return result;
}

/** Every stored eventId of the key's tenant, walking /v1/events to the end. */
export async function allStoredIds(url: string, key: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const response = await fetch(`${url}/v1/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { headers: { 'x-api-key': key } });
    if (response.status !== 200) throw new Error(`GET /v1/events: ${response.status} ${await response.text()}`);
    const page = (await response.json()) as { events: { eventId: string }[]; nextCursor: string | null };
    for (const e of page.events) ids.push(e.eventId);
    cursor = page.nextCursor;
  } while (cursor);
  return ids;
}
