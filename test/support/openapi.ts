/**
 * Every reply the black-box suites read through `request()` is checked against the committed OpenAPI
 * document (docs/openapi.json, kept current by test/http/openapi.test.ts): its status must be one
 * the operation declares, its media type one that status declares, and its body must match the
 * schema. Replies of paths the document leaves out (/metrics, /docs, unknown paths) are checked
 * only when they are errors, against the problem+json schema every operation shares.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';

interface MediaType {
  schema: unknown;
}
interface Operation {
  responses: Record<string, { content?: Record<string, MediaType> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
}

export interface CheckedReply {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

let loaded: { doc: Document; ajv: Ajv2020; compiled: Map<string, ValidateFunction> } | undefined;

/** The document and one validator for every schema it holds, made on first use. */
function load(root: string) {
  if (loaded !== undefined) return loaded;
  const doc = JSON.parse(readFileSync(join(root, 'docs/openapi.json'), 'utf8')) as Document;
  // strict false: the document also holds OpenAPI's own keywords (discriminator). Formats are not checked.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema(doc as object, 'openapi.json');
  loaded = { doc, ajv, compiled: new Map() };
  return loaded;
}

const pointer = (...tokens: string[]) => tokens.map((t) => `/${t.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

function validator(root: string, path: string): ValidateFunction {
  const { ajv, compiled } = load(root);
  let validate = compiled.get(path);
  if (validate === undefined) {
    validate = ajv.compile({ $ref: `openapi.json#${path}` });
    compiled.set(path, validate);
  }
  return validate;
}

/** Throws when the reply to `method url` does not match the document. */
export function checkReply(root: string, method: string, url: string, reply: CheckedReply): void {
  if (method === 'HEAD') return;
  const { doc } = load(root);
  const path = new URL(url).pathname;
  let operationPath = doc.paths[path]?.[method.toLowerCase()] === undefined ? undefined : ['paths', path, method.toLowerCase()];
  if (operationPath === undefined) {
    if (reply.status < 400) return;
    // Every operation declares the same problem+json for 4XX: the first one's stands for all.
    const [somePath, ops] = Object.entries(doc.paths)[0]!;
    operationPath = ['paths', somePath, Object.keys(ops)[0]!];
  }
  const operation = operationPath.slice(1).reduce<unknown>((node, token) => (node as Record<string, unknown>)[token], doc.paths) as Operation;
  const statusKey = [String(reply.status), `${String(reply.status)[0]}XX`, 'default'].find((k) => operation.responses[k] !== undefined);
  const where = `${method} ${path} → ${reply.status}`;
  if (statusKey === undefined) throw new Error(`OpenAPI: ${where}: the document declares no such status for this operation`);
  const mediaType = (reply.headers.get('content-type') ?? '').split(';', 1)[0]!.trim();
  const content = operation.responses[statusKey]!.content ?? {};
  if (content[mediaType] === undefined) throw new Error(`OpenAPI: ${where}: media type "${mediaType}" is not declared (${Object.keys(content).join(', ') || 'none'})`);
  const validate = validator(root, pointer(...operationPath, 'responses', statusKey, 'content', mediaType, 'schema'));
  // A JSON media type's body is checked as JSON; any other (text/csv) as the text it is.
  const isJson = mediaType.endsWith('json');
  if (isJson && reply.json === undefined) throw new Error(`OpenAPI: ${where}: the body is not JSON: ${reply.text.slice(0, 200)}`);
  if (!validate(isJson ? reply.json : reply.text)) throw new Error(`OpenAPI: ${where}: the body does not match the document: ${JSON.stringify(validate.errors?.slice(0, 3))}\n${reply.text.slice(0, 300)}`);
}
