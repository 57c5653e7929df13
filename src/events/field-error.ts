import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

/** One problem with one field of an input, as reported to clients and kept in quarantine. */
export const FIELD_ERROR = Type.Object({
  path: Type.String({ description: 'JSON Pointer to the field (RFC 6901), e.g. `/deletedObjects/3/objectKey`; `` for the whole input' }),
  message: Type.String({ description: 'what is wrong, in words a client developer can act on' }),
  expected: Type.String({ description: 'what was expected there, e.g. `string of at most 1024 bytes`' }),
  received: Type.String({ description: 'what came instead, summarised (type and a short excerpt), e.g. `number 12`' }),
});

export type FieldError = Static<typeof FIELD_ERROR>;

const EXCERPT_LENGTH = 40;

/**
 * A string quoted as JSON, cut to about 40 characters with `…`. JSON escaping keeps U+0000 and
 * unpaired surrogates out of the result, so it can be stored and sent back as is.
 */
export function quoteExcerpt(text: string): string {
  if (text.length <= EXCERPT_LENGTH) return JSON.stringify(text);
  let cut = text.slice(0, EXCERPT_LENGTH);
  const last = cut.charCodeAt(cut.length - 1);
  // Do not split a surrogate pair: the half left over would show as an escape.
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return JSON.stringify(cut).slice(0, -1) + '…"';
}

/** The `received` summary of a value: its type and a short excerpt, e.g. `number -5`, `array of 3`. */
export function describeReceived(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return `string ${quoteExcerpt(value)}`;
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  if (Array.isArray(value)) return `array of ${value.length}`;
  return typeof value;
}

/** One reference token of a JSON Pointer (RFC 6901): `~` and `/` escaped. */
export function pointerToken(name: string): string {
  return name.replaceAll('~', '~0').replaceAll('/', '~1');
}
