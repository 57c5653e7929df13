/**
 * Tiers and free allowances as bands over a month's cumulative quantity, in a line's base unit
 * (byte-seconds, byte-hours, requests, bytes). A Meter consumes quantities in time order, so the
 * account reaches each tier when it really did within the month.
 */
import type { Dec } from './money.js';
import { ZERO, dec } from './money.js';

export interface Band {
  /** Cumulative monthly quantity where the band ends (exclusive); null = no end. */
  readonly upto: bigint | null;
  /** Price per `denominator` base units of the line. */
  readonly price: Dec;
}

export function bandsOf(tiers: readonly { uptoGb?: number; price: string }[], unit: bigint, offset = 0n): Band[] {
  return tiers.map((t) => ({ upto: t.uptoGb === undefined ? null : BigInt(t.uptoGb) * unit + offset, price: dec(t.price) }));
}

/** End of the leading free bands (price 0): the month's allowance. */
export function freeAllowance(bands: readonly Band[]): bigint {
  let end = 0n;
  for (const b of bands) {
    if (!b.price.isZero()) break;
    if (b.upto === null) return end;
    end = b.upto;
  }
  return end;
}

export class Meter {
  cumulative = 0n;

  /** Consumes `quantity`; returns Σ portion × price (to be divided by the line's denominator). */
  take(quantity: bigint, bands: readonly Band[]): Dec {
    let left = quantity;
    let numerator = ZERO;
    for (const band of bands) {
      if (left === 0n) break;
      if (band.upto !== null && this.cumulative >= band.upto) continue;
      const room = band.upto === null ? left : band.upto - this.cumulative;
      // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.min does not take
      const portion = left < room ? left : room;
      numerator = numerator.add(band.price.mul(dec(portion)));
      this.cumulative += portion;
      left -= portion;
    }
    return numerator;
  }

  /** Price of the next unit at a cumulative quantity (the marginal price). */
  static priceAt(cumulative: bigint, bands: readonly Band[]): Dec {
    for (const band of bands) if (band.upto === null || cumulative < band.upto) return band.price;
    return bands[bands.length - 1]!.price;
  }
}
