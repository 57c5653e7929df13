/**
 * One info line per answered request, when `--access-log` is on: method, route, status, error code,
 * tenant and key id, duration, bytes in and out. Off by default: at our request rates a line per
 * request costs more than the request. Never a header: the API key travels in one.
 */
import type { FastifyInstance } from 'fastify';

const CODE = /"code":"(BM_ERR_[A-Z_]+)"/;

export function registerAccessLog(app: FastifyInstance): void {
  const codes = new WeakMap<object, string>();
  app.addHook('onSend', (request, reply, payload, done) => {
    // The refusal's code, read back from its problem+json body (small, and only for errors).
    const code = reply.statusCode >= 400 && typeof payload === 'string' ? CODE.exec(payload)?.[1] : undefined;
    if (code !== undefined) codes.set(request, code);
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    const code = codes.get(request);
    const declared = Number(request.headers['content-length']);
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? null,
        status: reply.statusCode,
        ...(code === undefined ? {} : { code }),
        tenant: request.tenant?.name ?? null,
        keyId: request.tenant?.keyId ?? null,
        durationMs: Math.round(reply.elapsedTime * 100) / 100,
        bytesIn: Number.isFinite(declared) ? declared : ((request.body as { bytes?: Buffer } | undefined)?.bytes?.length ?? 0),
        bytesOut: Number(reply.getHeader('content-length') ?? 0),
      },
      'request',
    );
    done();
  });
}
