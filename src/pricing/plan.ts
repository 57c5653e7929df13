/** The shape of one price-plan file (prices/price-plan.schema.json), after validation. */
export type Metering = 'byte-hours' | 'daily-peak' | 'daily-snapshot';

export interface StorageTier {
  readonly uptoGb?: number;
  readonly pricePerGbMonth: string;
}

export interface EgressTier {
  readonly uptoGb?: number;
  readonly pricePerGb: string;
}

export interface RequestClass {
  readonly price: string;
  readonly per: number;
  readonly freePerDay?: number;
  readonly freePerMonth?: number;
  readonly roundUpToWholeUnit?: boolean;
}

export interface PricePlan {
  readonly id: string;
  readonly provider: string;
  readonly default?: boolean;
  /** YYYY-MM-DD, in force from 00:00 UTC; absent = from the beginning. */
  readonly validFrom?: string;
  readonly currency: string;
  readonly asOf: string;
  readonly sources: readonly string[];
  readonly notes?: readonly string[];
  readonly monthlyFee?: string;
  readonly storage: {
    readonly gbBytes: number;
    readonly metering: Metering;
    readonly hoursPerMonth: 'calendar' | number;
    readonly tiers: readonly StorageTier[];
    readonly minimumDays: number;
    readonly minimumObjectBytes: number;
    readonly monthlyMinimumGb: number;
    readonly roundUpToWholeUnit?: boolean;
  };
  readonly requests: {
    readonly classes: Readonly<Record<string, RequestClass>>;
    /** Every event kind → a class name or `free`. */
    readonly actions: Readonly<Record<string, string>>;
  };
  readonly egress: {
    readonly gbBytes: number;
    readonly freeMultipleOfStorage?: number;
    readonly tiers: readonly EgressTier[];
  };
}

/** Unix seconds at which a version comes into force. */
export function validFromSeconds(plan: PricePlan): number {
  return plan.validFrom === undefined ? Number.NEGATIVE_INFINITY : Date.parse(`${plan.validFrom}T00:00:00Z`) / 1000;
}
