export { BucketmeterClient } from './client.js';
export type { BucketmeterClientOptions } from './client.js';
export { instrumentS3 } from './s3/instrument.js';
export type { InstrumentOptions, EgressInfo } from './s3/instrument.js';
export { withAttribution, currentAttribution } from './s3/attribution.js';
export { uuidv7 } from './uuidv7.js';
export type { Attribution, CopySource, DeletedObject, FieldError, MeterError, MeterEvent, MeterStats } from './types.js';
