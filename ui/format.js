// Number, byte, money and time formatting, exact decimal sums of money strings, and CSV.

const INT = new Intl.NumberFormat('en-US');

/** An integer count with thousands separators. */
export function count(n) {
  return n === null || n === undefined ? '–' : INT.format(n);
}

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB', 'EB'];

/** Bytes in decimal units (1 KB = 1,000 B), as storage providers bill them. */
export function bytes(n) {
  if (n === null || n === undefined) return '–';
  let v = Number(n);
  let unit = 0;
  while (Math.abs(v) >= 1000 && unit < UNITS.length - 1) {
    v /= 1000;
    unit++;
  }
  return unit === 0 ? `${INT.format(v)} B` : `${v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)} ${UNITS[unit]}`;
}

/** Byte-hours as byte-months would be a unit of cost; the dashboard shows GB-hours. */
export function byteHours(n) {
  return n === null || n === undefined ? '–' : `${(Number(n) / 1e9).toFixed(2)} GB·h`;
}

const moneyFormats = new Map();

/** A decimal money string in its currency, e.g. "12.345" USD → $12.35 (display only: sums are exact). */
export function money(amount, currency) {
  if (amount === null || amount === undefined) return '–';
  let f = moneyFormats.get(currency);
  if (f === undefined) {
    try {
      f = new Intl.NumberFormat('en-US', { style: 'currency', currency, minimumFractionDigits: 2, maximumFractionDigits: 4 });
    } catch {
      f = { format: (v) => `${v} ${currency}` };
    }
    moneyFormats.set(currency, f);
  }
  return f.format(Number(amount));
}

/** Exact sum of decimal strings (money is never added as floats). */
export function decimalSum(values) {
  let scale = 0;
  for (const v of values) {
    const dot = String(v).indexOf('.');
    if (dot >= 0) scale = Math.max(scale, String(v).length - dot - 1);
  }
  let total = 0n;
  for (const v of values) total += scaled(String(v), scale);
  return unscale(total, scale);
}

function scaled(text, scale) {
  const negative = text.startsWith('-');
  const [whole, fraction = ''] = (negative ? text.slice(1) : text).split('.');
  const n = BigInt((whole || '0') + fraction.padEnd(scale, '0'));
  return negative ? -n : n;
}

function unscale(n, scale) {
  const negative = n < 0n;
  const digits = (negative ? -n : n).toString().padStart(scale + 1, '0');
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return negative ? `-${text}` : text;
}

/** A percentage of a total, one decimal. */
export function share(part, total) {
  return total > 0 ? `${((100 * part) / total).toFixed(1)} %` : '–';
}

/** An ISO instant shown in the chosen zone, e.g. 2026-03-01 11:00:00. */
export function instant(iso, timeZone) {
  return iso ? new Date(iso).toLocaleString('sv-SE', { timeZone }) : '–';
}

/** Offset of `timeZone` from UTC at `ms`, in milliseconds. */
function offsetAt(ms, timeZone) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  const asUtc = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  return asUtc - Math.floor(ms / 1000) * 1000;
}

/** The UTC instant of midnight starting `date` (YYYY-MM-DD) in `timeZone`, as an ISO string. */
export function zoneMidnight(date, timeZone) {
  const [y, m, d] = date.split('-').map(Number);
  const guess = Date.UTC(y, m - 1, d);
  let ms = guess - offsetAt(guess, timeZone);
  ms = guess - offsetAt(ms, timeZone);
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

/** Today's date in `timeZone`, plus `days`. */
export function dateIn(timeZone, days = 0) {
  const today = new Date().toLocaleDateString('sv-SE', { timeZone });
  return addDays(today, days);
}

export function addDays(date, days) {
  const [y, m, d] = date.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + days)).toISOString().slice(0, 10);
}

/** RFC 4180 CSV of a header row and rows of cells. */
export function csv(header, rows) {
  const cell = (v) => {
    const s = v === null || v === undefined ? '' : String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [header, ...rows].map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n';
}
