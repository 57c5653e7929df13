/**
 * An independent, slow reference for the pricing engine, written differently on purpose:
 * exact fractions of BigInts (no decimal library), quantities in GB-months and GB rather than base
 * units, tiers as a cumulative cost function C(x) evaluated before and after each slot, and requests
 * walked one at a time through the daily and monthly free allowances.
 * Returns every fine amount by `charge|hour|key`, rounded half-even to 10 places.
 */
import type { PricePlan } from '../../src/pricing/plan.js';
import type { AccountMonth, Attribution, KeyHour } from '../../src/pricing/quantities.js';

class Frac {
  readonly n: bigint;
  readonly d: bigint;
  constructor(n: bigint, d = 1n) {
    if (d < 0n) [n, d] = [-n, -d];
    const g = gcd(n < 0n ? -n : n, d);
    this.n = n / g;
    this.d = d / g;
  }
  static of(text: string | number | bigint): Frac {
    const s = String(text);
    const [whole, part = ''] = s.split('.');
    return new Frac(BigInt(whole! + part), 10n ** BigInt(part.length));
  }
  add(o: Frac) { return new Frac(this.n * o.d + o.n * this.d, this.d * o.d); }
  sub(o: Frac) { return new Frac(this.n * o.d - o.n * this.d, this.d * o.d); }
  mul(o: Frac) { return new Frac(this.n * o.n, this.d * o.d); }
  div(o: Frac) { return new Frac(this.n * o.d, this.d * o.n); }
  lt(o: Frac) { return this.n * o.d < o.n * this.d; }
  min(o: Frac) { return this.lt(o) ? this : o; }
  max(o: Frac) { return this.lt(o) ? o : this; }
  isZero() { return this.n === 0n; }
}
function gcd(a: bigint, b: bigint): bigint {
  while (b !== 0n) [a, b] = [b, a % b];
  return a === 0n ? 1n : a;
}
const F0 = new Frac(0n);
const ceilInt = (x: Frac): Frac => new Frac(x.n % x.d === 0n ? x.n / x.d : x.n / x.d + (x.n > 0n ? 1n : 0n));

/** Half-even rounding of a fraction to 10 places, as a fixed-point string. */
export function roundHalfEven(x: Frac, places = 10): string {
  const scale = 10n ** BigInt(places);
  const num = x.n * scale;
  const negative = num < 0n;
  const a = negative ? -num : num;
  let q = a / x.d;
  const r = a % x.d;
  if (2n * r > x.d || (2n * r === x.d && q % 2n === 1n)) q += 1n;
  const digits = q.toString().padStart(places + 1, '0');
  const text = `${digits.slice(0, -places)}.${digits.slice(-places)}`;
  return negative && q !== 0n ? `-${text}` : text;
}

type Tier = { upto: Frac | null; price: Frac };

/** Cost of the cumulative quantity range [0, x) through tiers. */
function C(tiers: Tier[], x: Frac): Frac {
  let total = F0;
  let lower = F0;
  for (const t of tiers) {
    const upper = t.upto ?? x.max(lower);
    const overlap = x.min(upper).sub(lower);
    if (!overlap.lt(F0) && !overlap.isZero()) total = total.add(overlap.mul(t.price));
    if (t.upto === null || !t.upto.lt(x) ) break;
    lower = upper;
  }
  return total;
}

const keyId = (k: Attribution | null) => (k === null ? 'unallocated' : JSON.stringify(k));

export function referenceCosts(input: AccountMonth): Map<string, string> {
  const [y, m] = input.month.split('-').map(Number) as [number, number];
  const start = Date.UTC(y, m - 1, 1) / 1000;
  const end = Date.UTC(y, m, 1) / 1000;
  const version = (t: number): PricePlan | undefined => {
    let best: PricePlan | undefined;
    let bestFrom = -Infinity;
    for (const v of input.versions) {
      const from = v.validFrom === undefined ? -Infinity : Date.parse(v.validFrom + 'T00:00:00Z') / 1000;
      if (from <= t && from >= bestFrom) [best, bestFrom] = [v, from];
    }
    return best;
  };
  const p0 = input.versions[0]!;
  const H = new Frac(BigInt(p0.storage.hoursPerMonth === 'calendar' ? (end - start) / 3600 : p0.storage.hoursPerMonth));
  const gb = new Frac(BigInt(p0.storage.gbBytes));
  const out = new Map<string, string>();
  const put = (charge: string, hour: number, key: Attribution | null, cost: Frac) => {
    const id = `${charge}|${hour}|${keyId(key)}`;
    if (out.has(id)) throw new Error(`reference: two amounts for ${id}`);
    out.set(id, roundHalfEven(cost));
  };
  const split = (charge: string, cost: Frac, parts: { hour: number; key: Attribution; w: bigint }[]) => {
    const W = parts.reduce((s, p) => s + p.w, 0n);
    for (const p of parts) if (p.w > 0n) put(charge, p.hour, p.key, cost.mul(new Frac(p.w, W)));
  };
  const storageTiers = (v: PricePlan): Tier[] => v.storage.tiers.map((t) => ({ upto: t.uptoGb === undefined ? null : new Frac(BigInt(t.uptoGb)), price: Frac.of(t.pricePerGbMonth) }));
  const hours: number[] = [];
  for (let h = start; h < end; h += 3600) hours.push(h);
  const at = (h: number): KeyHour[] => input.quantities.filter((q) => q.hour === h);
  const padMin = (v: PricePlan) => BigInt(v.storage.minimumObjectBytes);
  const paddedSeconds = (v: PricePlan, q: KeyHour) => (q.byteSeconds ?? 0n) + padMin(v) * (q.smallObjectSeconds ?? 0n) - (q.smallObjectByteSeconds ?? 0n);

  // Storage in GB-months, slot by slot; `after` records the cumulative after each slot.
  let T = F0;
  let totalPaddedSeconds = 0n;
  const after: { hour: number; T: Frac }[] = [];
  for (const h of hours) {
    const v = version(h);
    if (v === undefined) continue;
    let gbMonths = F0;
    let parts: { hour: number; key: Attribution; w: bigint }[] = [];
    if (v.storage.metering === 'byte-hours') {
      parts = at(h).map((q) => ({ hour: h, key: q.key, w: paddedSeconds(v, q) }));
      const s = parts.reduce((a, p) => a + p.w, 0n);
      totalPaddedSeconds += s;
      gbMonths = new Frac(s).div(gb).div(new Frac(3600n)).div(H);
    } else if (v.storage.metering === 'daily-snapshot') {
      if ((h - start) % 86400 !== 0) continue;
      parts = at(h).map((q) => ({ hour: h, key: q.key, w: (q.snapshotBytes ?? 0n) + padMin(v) * (q.snapshotSmallObjects ?? 0n) - (q.snapshotSmallObjectBytes ?? 0n) }));
      gbMonths = new Frac(parts.reduce((a, p) => a + p.w, 0n)).mul(new Frac(24n)).div(gb).div(H);
    } else {
      if ((h - start) % 86400 !== 0) continue;
      const peak = input.dailyPeakBytes?.get(h) ?? 0n;
      if (peak === 0n) continue;
      for (let hh = h; hh < h + 86400; hh += 3600) for (const q of at(hh)) parts.push({ hour: hh, key: q.key, w: paddedSeconds(v, q) });
      gbMonths = new Frac(peak * 24n).div(gb).div(H);
      const cost = C(storageTiers(v), T.add(gbMonths)).sub(C(storageTiers(v), T));
      T = T.add(gbMonths);
      after.push({ hour: h, T });
      if (parts.some((p) => p.w > 0n)) split('storage', cost, parts);
      else put('storage', h, null, cost);
      continue;
    }
    if (gbMonths.isZero()) continue;
    const cost = C(storageTiers(v), T.add(gbMonths)).sub(C(storageTiers(v), T));
    T = T.add(gbMonths);
    after.push({ hour: h, T });
    split('storage', cost, parts);
  }

  // Early deletes at the marginal price: the derivative of C just after the cumulative reached.
  for (const h of hours) {
    const v = version(h);
    if (v === undefined || v.storage.minimumDays === 0) continue;
    const parts = at(h).map((q) => ({ hour: h, key: q.key, w: q.earlyDeleteByteSeconds ?? 0n }));
    const s = parts.reduce((a, p) => a + p.w, 0n);
    if (s === 0n) continue;
    const reached = [...after].reverse().find((a) => a.hour <= h)?.T ?? F0;
    const tiers = storageTiers(v);
    const price = tiers.find((t) => t.upto === null || reached.lt(t.upto))!.price;
    split('early-delete', price.mul(new Frac(s)).div(gb).div(new Frac(3600n)).div(H), parts);
  }

  // Requests, one at a time.
  const classes = [...new Set(input.versions.flatMap((v) => Object.keys(v.requests.classes)))];
  for (const cls of classes) {
    let paid = 0n;
    let monthUsed = 0n;
    let day = -1;
    let dayUsed = 0n;
    for (const h of hours) {
      const v = version(h);
      const spec = v?.requests.classes[cls];
      if (v === undefined || spec === undefined) continue;
      const parts = at(h).filter((q) => v.requests.actions[q.key.action] === cls).map((q) => ({ hour: h, key: q.key, w: BigInt(q.requests ?? 0) }));
      const n = parts.reduce((a, p) => a + p.w, 0n);
      if (n === 0n) continue;
      const d = Math.floor(h / 86400);
      if (d !== day) [day, dayUsed] = [d, 0n];
      let cost = F0;
      for (let i = 0n; i < n; i++) {
        if (dayUsed < BigInt(spec.freePerDay ?? 0)) dayUsed++;
        else if (monthUsed < BigInt(spec.freePerMonth ?? 0)) monthUsed++;
        else {
          paid++;
          cost = cost.add(Frac.of(spec.price).div(new Frac(BigInt(spec.per))));
        }
      }
      split(`request:${cls}`, cost, parts);
    }
    const v = version(end - 3600);
    const spec = v?.requests.classes[cls];
    if (input.monthComplete !== false && spec?.roundUpToWholeUnit === true && paid % BigInt(spec.per) !== 0n) {
      const extra = BigInt(spec.per) - (paid % BigInt(spec.per));
      put(`request:${cls}:round-up`, end - 3600, null, Frac.of(spec.price).mul(new Frac(extra, BigInt(spec.per))));
    }
  }

  // Egress in GB; an allowance of N × average stored bytes comes before the tiers.
  let E = F0;
  for (const h of hours) {
    const v = version(h);
    if (v === undefined) continue;
    const egb = new Frac(BigInt(v.egress.gbBytes));
    const parts = at(h).map((q) => ({ hour: h, key: q.key, w: q.egressBytes ?? 0n }));
    const bytes = parts.reduce((a, p) => a + p.w, 0n);
    if (bytes === 0n) continue;
    const allowance = v.egress.freeMultipleOfStorage === undefined ? F0 : new Frac(BigInt(v.egress.freeMultipleOfStorage) * totalPaddedSeconds).div(new Frac(3600n)).div(H).div(egb);
    const tiers: Tier[] = [
      ...(allowance.isZero() ? [] : [{ upto: allowance, price: F0 }]),
      ...v.egress.tiers.map((t) => ({ upto: t.uptoGb === undefined ? null : new Frac(BigInt(t.uptoGb)).add(allowance), price: Frac.of(t.pricePerGb) })),
    ];
    const x = new Frac(bytes).div(egb);
    split('egress', C(tiers, E.add(x)).sub(C(tiers, E)), parts);
    E = E.add(x);
  }

  // Month end.
  const v = version(end - 3600);
  if (input.monthComplete !== false && v !== undefined) {
    const tiers = storageTiers(v);
    const minimum = new Frac(BigInt(v.storage.monthlyMinimumGb));
    if (T.lt(minimum)) {
      put('monthly-minimum', end - 3600, null, C(tiers, minimum).sub(C(tiers, T)));
      T = minimum;
    }
    if (v.storage.roundUpToWholeUnit === true) {
      let free = F0;
      for (const t of tiers) {
        if (!t.price.isZero() || t.upto === null) break;
        free = t.upto;
      }
      const billable = T.lt(free) ? F0 : T.sub(free);
      const extra = ceilInt(billable).sub(billable);
      if (!extra.isZero()) put('storage-round-up', end - 3600, null, C(tiers, T.add(extra)).sub(C(tiers, T)));
    }
    if (v.monthlyFee !== undefined) put('monthly-fee', end - 3600, null, Frac.of(v.monthlyFee));
  }
  return out;
}
