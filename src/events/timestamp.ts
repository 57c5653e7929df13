/**
 * Event timestamps: strict ISO 8601 date-times (the RFC 3339 profile) to Unix epoch seconds.
 * Accepted: `YYYY-MM-DDTHH:MM:SS`, an optional fraction (dropped, never rounded: the providers'
 * clocks have one-second granularity), then `Z` or an offset `±HH:MM`, `±HHMM` or `±HH` (converted
 * to UTC). `t` and `z` may be lowercase (RFC 3339). Years 1970..9999, in UTC after conversion.
 * Parsed by position rather than with Date.parse, which accepts far more than this and varies.
 */

/** 9999-12-31T23:59:59Z */
export const MAX_TIMESTAMP_SECONDS = 253402300799;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The epoch seconds of an ISO 8601 date-time, or undefined when the text is not one. */
export function parseTimestamp(text: string): number | undefined {
  if (text.length < 20) return undefined;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  if (
    text.charCodeAt(4) !== 0x2d /* - */ ||
    text.charCodeAt(7) !== 0x2d ||
    (text.charCodeAt(10) | 0x20) !== 0x74 /* T or t */ ||
    text.charCodeAt(13) !== 0x3a /* : */ ||
    text.charCodeAt(16) !== 0x3a
  ) {
    return undefined;
  }
  // digits() gives -1 for a non-digit, which every lower bound below rejects.
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return undefined;

  let at = 19;
  if (text.charCodeAt(at) === 0x2e /* . */) {
    const start = ++at;
    while (isDigit(text.charCodeAt(at))) at++;
    if (at === start) return undefined;
  }
  const zone = text.charCodeAt(at);
  let offsetSeconds = 0;
  if ((zone | 0x20) === 0x7a /* Z or z */) {
    at++;
  } else if (zone === 0x2b /* + */ || zone === 0x2d /* - */) {
    const offsetHours = digits(text, at + 1, 2);
    at += 3;
    let offsetMinutes = 0;
    if (at < text.length) {
      if (text.charCodeAt(at) === 0x3a) at++;
      offsetMinutes = digits(text, at, 2);
      at += 2;
    }
    if (offsetHours < 0 || offsetHours > 23 || offsetMinutes < 0 || offsetMinutes > 59) return undefined;
    offsetSeconds = (zone === 0x2b ? 1 : -1) * (offsetHours * 3600 + offsetMinutes * 60);
  } else {
    return undefined;
  }
  if (at !== text.length) return undefined;

  const seconds = Date.UTC(year, month - 1, day, hour, minute, second) / 1000 - offsetSeconds;
  return seconds >= 0 && seconds <= MAX_TIMESTAMP_SECONDS ? seconds : undefined;
}

/** Epoch seconds as ISO 8601 UTC without fraction, e.g. `2024-05-01T12:00:00Z`. */
export function formatTimestamp(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 19) + 'Z';
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

/** The number written with `count` decimal digits at `start`, or -1 if any of them is not a digit. */
function digits(text: string, start: number, count: number): number {
  let value = 0;
  for (let i = start; i < start + count; i++) {
    const code = text.charCodeAt(i);
    if (!isDigit(code)) return -1;
    value = value * 10 + (code - 0x30);
  }
  return value;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)) return 29;
  return DAYS_IN_MONTH[month - 1]!;
}
