/**
 * GET /openapi.json and /docs on a real server: the document is valid OpenAPI 3.1 for an independent
 * validator, matches the committed docs/openapi.json, and describes the events, the errors and the
 * key. (test/support/openapi.ts checks every reply of the black-box suites against it.)
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { OPENAPI } from '../../scripts/gen-docs.js';
import { ACTION_NAMES } from '../../src/events/catalogue.js';
import { ERRORS } from '../../src/errors.js';
import { fullWireEvent, minimalWireEvent } from '../support/events.js';
import { checkReply } from '../support/openapi.js';
import { ROOT, request, startServer, tempDir } from '../support/server.js';
import type { ServerProcess } from '../support/server.js';

// biome-ignore lint/suspicious/noExplicitAny: the document is walked field by field and asserted on.
type Doc = any;

describe('OpenAPI document', () => {
  let server: ServerProcess;
  let doc: Doc;

  before(async () => {
    server = await startServer({ dataDir: tempDir() });
    const reply = await fetch(`${server.url}/openapi.json`);
    assert.equal(reply.status, 200);
    doc = await reply.json();
  });
  after(() => server.stop());

  it('is valid OpenAPI 3.1 for an independent validator (@seriousme/openapi-schema-validator)', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc);
    assert.deepEqual(result, { valid: true });
    assert.equal(validator.version, '3.1');
  });

  it('is the committed docs/openapi.json (run `npm run docs` after changing a route or the catalogue)', () => {
    assert.deepEqual(JSON.parse(readFileSync(OPENAPI, 'utf8')), doc);
  });

  it('lists the API routes, each with a summary and a declared reply, and no operational route', () => {
    for (const path of ['/healthz', '/ping', '/s3', '/s3/batch', '/s3/recommendedBatchSize', '/s3/single', '/storage', '/storage/batch', '/storage/recommendedBatchSize', '/storage/singleCopy', '/v1/events', '/telemetry/lifecycle']) assert.ok(doc.paths[path], path);
    for (const path of ['/metrics', '/openapi.json', '/docs', '/docs/json']) assert.equal(doc.paths[path], undefined, path);
    // A route registered without a schema would show up here with neither.
    for (const [path, ops] of Object.entries<Doc>(doc.paths)) {
      for (const [method, op] of Object.entries<Doc>(ops)) {
        assert.ok(op.summary, `${method} ${path} has no summary`);
        assert.ok(op.responses['200']?.content?.['application/json']?.schema, `${method} ${path} declares no 200 reply`);
      }
    }
  });

  it('describes every event kind as a oneOf with a discriminator on action', () => {
    const event = doc.components.schemas.Event;
    assert.equal(event.oneOf.length, ACTION_NAMES.length);
    assert.equal(event.discriminator.propertyName, 'action');
    for (const action of ACTION_NAMES) {
      const ref = event.discriminator.mapping[action];
      assert.ok(event.oneOf.some((s: { $ref: string }) => s.$ref === ref), action);
      assert.deepEqual(doc.components.schemas[ref.split('/').pop()].properties.action.enum, [action]);
    }
    for (const path of ['/s3', '/storage']) assert.equal(doc.paths[path].post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/Event');
    assert.equal(doc.paths['/s3/batch'].post.requestBody.content['application/json'].schema.items.$ref, '#/components/schemas/Event');
  });

  it('accepts the valid event of each kind and refuses an unknown kind or a missing field', () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    ajv.addSchema(doc, 'openapi.json');
    const validate = ajv.compile({ $ref: 'openapi.json#/components/schemas/Event' });
    for (const action of ACTION_NAMES) {
      assert.ok(validate(minimalWireEvent(action)), `${action} minimal: ${JSON.stringify(validate.errors)}`);
      assert.ok(validate(fullWireEvent(action)), `${action} full: ${JSON.stringify(validate.errors)}`);
    }
    assert.equal(validate({ ...(minimalWireEvent('GetObject') as object), action: 'Unknown' }), false);
    const { bytes: _bytes, ...noBytes } = minimalWireEvent('GetObject') as Record<string, unknown>;
    assert.equal(validate(noBytes), false);
  });

  it('declares every error as problem+json with the catalogue of codes, and the key with the scope each operation needs as its security', () => {
    assert.deepEqual(doc.components.securitySchemes.apiKey, { ...doc.components.securitySchemes.apiKey, type: 'apiKey', in: 'header', name: 'X-API-Key' });
    for (const [path, ops] of Object.entries<Doc>(doc.paths)) {
      for (const [method, op] of Object.entries<Doc>(ops)) {
        for (const status of ['4XX', '5XX']) {
          const schema = op.responses[status]?.content?.['application/problem+json']?.schema;
          assert.ok(schema, `${method} ${path} ${status}`);
          assert.deepEqual(schema.properties.code.enum, Object.keys(ERRORS));
          assert.deepEqual(schema.required, ['type', 'title', 'status', 'detail', 'code']);
        }
        const keyless = path === '/healthz' || path.startsWith('/telemetry/');
        // The rule: `read` keys use /v1/*, `ingest` keys /ping, ingestion and recommendedBatchSize.
        const scope = path.startsWith('/v1/') ? 'read' : 'ingest';
        assert.deepEqual(op.security, keyless ? [] : [{ apiKey: [scope] }], `${method} ${path}`);
      }
    }
  });

  it('the reply check refuses a reply that does not match the document', () => {
    const reply = (status: number, json: unknown, type = 'application/json') => ({ status, headers: new Headers({ 'content-type': type }), text: JSON.stringify(json), json });
    assert.doesNotThrow(() => checkReply(ROOT, 'POST', `${server.url}/s3`, reply(200, { eventId: 'e', duplicate: false })));
    assert.throws(() => checkReply(ROOT, 'POST', `${server.url}/s3`, reply(200, { eventId: 'e' })), /does not match/);
    assert.throws(() => checkReply(ROOT, 'POST', `${server.url}/s3`, reply(400, { code: 'BM_ERR_EVENT_INVALID' }, 'application/json')), /media type/);
    assert.throws(() => checkReply(ROOT, 'GET', `${server.url}/nowhere`, reply(404, { type: 't', title: 't', status: 404, detail: 'd', code: 'BM_ERR_NOPE' }, 'application/problem+json')), /does not match/);
  });

  it('GET /openapi.json and /docs need no key; /docs is rendered from assets the server itself serves', async () => {
    const html = await fetch(`${server.url}/docs/`);
    assert.equal(html.status, 200);
    const page = await html.text();
    assert.doesNotMatch(page, /(src|href)="https?:\/\//, 'nothing fetched from another host');
    for (const asset of page.matchAll(/(?:src|href)="([^"]+\.(?:js|css))"/g)) {
      const reply = await fetch(new URL(asset[1]!, `${server.url}/docs/`));
      assert.equal(reply.status, 200, asset[1]);
    }
    const init = await (await fetch(`${server.url}/docs/static/swagger-initializer.js`)).text();
    assert.match(init, /validatorUrl/);
    const withKey = await request(`${server.url}/openapi.json`, { key: 'bmk_wrong' });
    assert.equal(withKey.status, 200);
  });
});
