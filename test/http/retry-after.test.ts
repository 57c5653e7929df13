/**
 * "`429` and `503` carry `Retry-After`" (README "Errors", the OpenAPI description), enforced from the
 * catalogue: every place in src that makes a coded error whose status there is 429 or 503 gives it a
 * `retryAfter` (the codes read by the type checker, so a code chosen at run time counts by each it may
 * be), or passes on one made elsewhere (`….extra`). A refusal the same request would meet again has
 * no place among them: its status is not 503 (BM_ERR_COST_TOO_LARGE and BM_ERR_ANSWER_TOO_LARGE are
 * 422). And toProblem writes the header of each.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { BmError, ERRORS } from '../../src/errors.js';
import type { ErrorCode } from '../../src/errors.js';
import { toProblem } from '../../src/http/problem.js';
import { ROOT } from '../support/server.js';

const RETRIED = new Set([429, 503]);
const retried = (code: string): boolean => RETRIED.has(ERRORS[code as ErrorCode].status);

interface Site {
  where: string;
  codes: string[];
  /** The third argument: an object literal with retryAfter, or another error's `.extra`. */
  retryAfter: boolean;
}

/** Every `new BmError(code, …)` and `super(code, …)` of a class extending BmError in src, with the codes it may make. */
function sites(): Site[] {
  const config = ts.parseJsonConfigFileContent(JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')), ts.sys, ROOT);
  const program = ts.createProgram(
    config.fileNames.filter((f) => f.startsWith(join(ROOT, 'src'))),
    config.options,
  );
  const checker = program.getTypeChecker();
  const found: Site[] = [];
  const extendsBmError = (node: ts.Node): boolean => {
    for (let n: ts.Node | undefined = node; n !== undefined; n = n.parent) {
      if (ts.isClassLike(n)) return (n.heritageClauses ?? []).some((h) => h.types.some((t) => t.expression.getText() === 'BmError'));
    }
    return false;
  };
  const codesOf = (arg: ts.Expression): string[] => {
    const type = checker.getTypeAtLocation(arg);
    return (type.isUnion() ? type.types : [type]).map((t) => (t.isStringLiteral() ? t.value : checker.typeToString(t)));
  };
  const givesRetryAfter = (arg: ts.Expression | undefined): boolean =>
    arg !== undefined &&
    ((ts.isObjectLiteralExpression(arg) && arg.properties.some((p) => p.name?.getText() === 'retryAfter')) || (ts.isPropertyAccessExpression(arg) && arg.name.text === 'extra'));
  for (const file of program.getSourceFiles()) {
    if (!file.fileName.startsWith(join(ROOT, 'src'))) continue;
    const visit = (node: ts.Node): void => {
      const made =
        (ts.isNewExpression(node) && node.expression.getText() === 'BmError') ||
        (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.SuperKeyword && extendsBmError(node));
      if (made && node.arguments !== undefined && node.arguments.length > 0) {
        const { line } = file.getLineAndCharacterOfPosition(node.getStart());
        found.push({ where: `${file.fileName.slice(ROOT.length + 1)}:${line + 1}`, codes: codesOf(node.arguments[0]!), retryAfter: givesRetryAfter(node.arguments[2]) });
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}

describe('Retry-After on every 429 and 503', () => {
  it('every coded error src makes with a 429 or 503 status gives Retry-After', () => {
    const all = sites();
    // The scan sees the sites: the bound's refusal and a read's time budget among them.
    assert.ok(all.some((s) => s.codes.includes('BM_ERR_COST_TOO_LARGE')) && all.some((s) => s.codes.includes('BM_ERR_QUERY_TIMEOUT')), 'sites found');
    for (const site of all) {
      for (const code of site.codes) assert.ok(code in ERRORS, `${site.where}: a code the type checker cannot name (${code})`);
    }
    const missing = all.filter((s) => s.codes.some(retried) && !s.retryAfter).map((s) => `${s.where} (${s.codes.filter(retried).join(', ')})`);
    assert.deepEqual(missing, [], 'a 429 or 503 without Retry-After');
  });

  it('toProblem writes the Retry-After of each such error, and a refusal the same request meets again is not a 503', () => {
    for (const code of Object.keys(ERRORS) as ErrorCode[]) {
      if (!retried(code)) continue;
      assert.equal(toProblem(new BmError(code, undefined, { retryAfter: 7 })).headers['retry-after'], '7', code);
    }
    assert.equal(ERRORS.BM_ERR_COST_TOO_LARGE.status, 422);
    assert.equal(ERRORS.BM_ERR_ANSWER_TOO_LARGE.status, 422);
  });
});
