/**
 * /metrics for Prometheus: counting every reply, and the scrape route, on the API's port or (with
 * --metrics-port) on a listener of its own. Unauthenticated: Prometheus scrapers send no API key.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Counter } from 'prom-client';
import { BmError } from '../errors.js';
import { METRICS_CONTENT_TYPE } from '../metrics/cluster.js';
import { toProblem } from './problem.js';
import { NO_QUERY } from './schemas.js';

export interface HttpMetrics {
  requests: Counter<'route' | 'method' | 'status'>;
  /** The text of a scrape; absent when /metrics has its own listener. */
  scrape?: () => Promise<string>;
}

/** Counts every reply by route template, so that the label set stays bounded whatever paths clients try. */
export function countReplies(app: FastifyInstance, requests: HttpMetrics['requests']): void {
  app.addHook('onResponse', (request, reply, done) => {
    requests.inc({ route: request.routeOptions.url ?? 'unmatched', method: request.method, status: String(reply.statusCode) });
    done();
  });
}

export function metricsRoute(scrape: () => Promise<string>) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/metrics', { config: { auth: false }, schema: { hide: true, querystring: NO_QUERY } }, async (_request, reply) => reply.type(METRICS_CONTENT_TYPE).send(await scrape()));
  };
}

/** The separate listener of --metrics-port: GET /metrics and nothing else. */
export async function listenMetrics(options: { port: number; host: string; scrape: () => Promise<string> }): Promise<Server> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?', 1)[0]!;
    const answer = (status: number, headers: Record<string, string>, body: string) => response.writeHead(status, headers).end(body);
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      const problem = toProblem(new BmError('BM_ERR_NOT_FOUND', `No route ${request.method} ${path}: this listener serves GET /metrics only.`), path);
      answer(problem.status, problem.headers, JSON.stringify(problem.body));
      return;
    }
    options.scrape().then(
      (text) => answer(200, { 'content-type': METRICS_CONTENT_TYPE }, text),
      (error: unknown) => {
        const problem = toProblem(error, path);
        answer(problem.status, problem.headers, JSON.stringify(problem.body));
      },
    );
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(options.port, options.host, () => resolve()));
  return server;
}
