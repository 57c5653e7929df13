/**
 * Text that came from a tenant (bodies, field names, error details) must not drive the operator's
 * terminal: control characters (C0, DEL, C1: escape sequences) and bidirectional overrides are shown
 * as \uXXXX escapes.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is this file's purpose.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** In JSON text C0 characters inside strings are escaped already, and newlines between members are layout. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const escapeChar = (c: string): string => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');

/** A line of plain text, safe to print. */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, escapeChar);
}

/** JSON.stringify's output, safe to print and still the same JSON value. */
export function terminalSafeJson(json: string): string {
  return json.replace(UNSAFE_IN_JSON, escapeChar);
}
