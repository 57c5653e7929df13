/**
 * The dashboard: plain ES modules and CSS from the package's ui/ folder and uPlot's files from
 * node_modules, a fixed list read once at start (nothing to build, no path from the request ever
 * reaches the file system). `/` and `/ui` redirect to `/ui/`. The pages need no key to load: the key
 * is pasted into the page and sent by it to /v1/* as X-API-Key. The policy forbids inline script
 * and any origin but this one.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { NO_QUERY } from './schemas.js';

const UI_DIR = new URL('../../../ui/', import.meta.url);
const require = createRequire(import.meta.url);

const TYPES: Record<string, string> = { html: 'text/html; charset=utf-8', js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };

/** Served path under /ui/ → file. */
function files(): Map<string, string> {
  const own = ['index.html', 'app.css', 'app.js', 'api.js', 'format.js', 'chart.js', 'views.js', 'dom.js'];
  const served = new Map(own.map((name) => [name, fileURLToPath(new URL(name, UI_DIR))]));
  served.set('vendor/uPlot.esm.js', require.resolve('uplot/dist/uPlot.esm.js'));
  served.set('vendor/uPlot.min.css', require.resolve('uplot/dist/uPlot.min.css'));
  return served;
}

export const UI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const HEADERS = {
  'content-security-policy': UI_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  // The files change with the package only; revalidating keeps an upgrade from mixing versions.
  'cache-control': 'no-cache',
};

export function uiRoutes() {
  return async (app: FastifyInstance): Promise<void> => {
    const route = { config: { auth: false }, schema: { hide: true, querystring: NO_QUERY } };
    for (const [path, file] of files()) {
      const body = readFileSync(file);
      const type = TYPES[path.slice(path.lastIndexOf('.') + 1)]!;
      const url = path === 'index.html' ? '/ui/' : `/ui/${path}`;
      app.get(url, route, async (_request, reply) => reply.headers(HEADERS).type(type).send(body));
    }
    for (const url of ['/', '/ui']) app.get(url, route, async (_request, reply) => reply.redirect('/ui/', 302));
  };
}
