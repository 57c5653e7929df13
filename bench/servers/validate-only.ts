/**
 * Baseline: what bucketmeter's HTTP work costs without the store. A Fastify route that parses the same
 * bodies with Fastify's own JSON parser, validates and normalizes every event with the product's
 * validator, and replies in bucketmeter's shapes, storing nothing.
 */
import Fastify from 'fastify';
import { SETTINGS } from '../../src/config.js';
import type { FieldError } from '../../src/events/field-error.js';
import { createEventValidator } from '../../src/events/validate.js';

const validator = createEventValidator({ maxFutureSeconds: SETTINGS.maxFutureSeconds.default, maxExtraBytes: SETTINGS.maxExtraBytes.default });
const app = Fastify({ logger: false, bodyLimit: SETTINGS.maxBodyBytes.default, keepAliveTimeout: 65_000 });
const now = () => Math.floor(Date.now() / 1000);

for (const url of ['/storage', '/s3']) {
  app.post(url, async (request, reply) => {
    const result = validator.validate(request.body, now());
    if (!result.ok) return reply.code(400).send({ errors: result.errors });
    return { eventId: 'bm-0000000000000', duplicate: false };
  });
}
for (const url of ['/storage/batch', '/s3/batch']) {
  app.post(url, async (request, reply) => {
    if (!Array.isArray(request.body)) return reply.code(400).send({ error: 'not an array' });
    const at = now();
    let accepted = 0;
    const rejected: { index: number; errors: FieldError[] }[] = [];
    request.body.forEach((item: unknown, index) => {
      const result = validator.validate(item, at);
      if (result.ok) accepted++;
      else rejected.push({ index, errors: result.errors });
    });
    return { accepted, duplicates: 0, rejected };
  });
}

const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ port: Number(new URL(address).port), msg: 'bench server listening' })}\n`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
