/**
 * Query windows: the calendar hours, days or months of an IANA time zone, cut to [from, to), as
 * boundaries in hours since the epoch. Rollups are hourly in UTC, so a window can be answered
 * exactly only when it starts and ends on a UTC hour, that is when every offset of the zone in the
 * range is a whole number of hours; otherwise ZoneNotExactError (never an approximate answer).
 */
export const GRANULARITIES = ['hour', 'day', 'month', 'none'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

export class ZoneNotExactError extends Error {
  override readonly name = 'ZoneNotExactError';
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formatters.set(zone, f);
  }
  return f;
}

/** Whether `zone` is an IANA zone name this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

/** The zone's offset from UTC at an instant, in seconds (local = UTC + offset). */
export function offsetAt(zone: string, seconds: number): number {
  const parts: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(new Date(seconds * 1000))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const local = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!) / 1000;
  return local - seconds;
}

/**
 * The zone's offsets over hours [from, to) as segments (first hour, offset), found by sampling every
 * day and bisecting where two samples differ (zones change offset at most once a day).
 */
function offsetSegments(zone: string, from: number, to: number): { hour: number; offset: number }[] {
  const at = (hour: number) => offsetAt(zone, hour * 3600);
  const segments = [{ hour: from, offset: at(from) }];
  for (let h = from; h < to; ) {
    const next = Math.min(h + 24, to);
    const offset = at(next);
    if (offset !== segments[segments.length - 1]!.offset) {
      let lo = h;
      let hi = next; // at(lo) is the current offset, at(hi) the new one
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (at(mid) === offset) hi = mid;
        else lo = mid;
      }
      if (hi < to) segments.push({ hour: hi, offset });
    }
    h = next;
  }
  return segments;
}

/** Window boundaries (hours since the epoch) for [fromHour, toHour): window i is [b[i], b[i + 1]). */
export function windowBounds(fromHour: number, toHour: number, granularity: Granularity, zone: string): number[] {
  if (granularity === 'none') return [fromHour, toHour];
  const segments = offsetSegments(zone, fromHour, toHour);
  const odd = segments.find((s) => s.offset % 3600 !== 0);
  if (odd !== undefined) {
    const minutes = Math.abs(odd.offset / 60);
    throw new ZoneNotExactError(
      `${zone} is ${odd.offset < 0 ? '-' : '+'}${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, '0')} from UTC in this range; usage is stored by UTC hour, so its ${granularity}s cannot be answered exactly`,
    );
  }
  const bounds = [fromHour];
  let s = 0;
  let previous: number | undefined;
  for (let h = fromHour; h < toHour; h++) {
    while (s + 1 < segments.length && segments[s + 1]!.hour <= h) s++;
    const local = h * 3600 + segments[s]!.offset;
    let key: number;
    if (granularity === 'hour') key = h;
    else if (granularity === 'day') key = Math.floor(local / 86400);
    else {
      const date = new Date(local * 1000);
      key = date.getUTCFullYear() * 12 + date.getUTCMonth();
    }
    if (previous !== undefined && key !== previous) bounds.push(h);
    previous = key;
  }
  bounds.push(toHour);
  return bounds;
}
