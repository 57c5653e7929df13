/** The price book and bucket assignment a node runs with, from --prices and --bucket-plans. */
import type { Config } from '../config.js';
import type { BucketPlans } from './assignment.js';
import { NO_BUCKET_PLANS, loadBucketPlans } from './assignment.js';
import type { PriceBook } from './catalogue.js';
import { loadPriceBook } from './catalogue.js';

export interface Pricing {
  readonly book: PriceBook;
  readonly assignment: BucketPlans;
}

/** Throws ConfigError naming every bad file, so a node never starts on a broken catalogue. */
export function loadPricing(config: Pick<Config, 'prices' | 'bucketPlans'>): Pricing {
  const book = loadPriceBook(config.prices);
  return { book, assignment: config.bucketPlans === undefined ? NO_BUCKET_PLANS : loadBucketPlans(config.bucketPlans, book) };
}
