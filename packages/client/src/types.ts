/** Shapes shared by the sender and the S3 instrumentation. Field names are bucketmeter's wire names. */

/** Who caused a storage operation; every field optional. */
export interface Attribution {
  customerId?: string;
  featureId?: string;
  clientType?: string;
  clientId?: string;
}

export interface CopySource {
  bucket: string;
  objectKey: string;
  versionId?: string;
}

export interface DeletedObject {
  objectKey: string;
  resultingDeleteMarkerVersionId?: string;
  hardDeletedVersionId?: string;
}

/** One event, as POST /storage takes it. `timestamp` and `eventId` are filled in by track() when absent. */
export interface MeterEvent extends Attribution {
  action: string;
  provider: string;
  /** ISO 8601 with a zone, or a Date; default: when track() was called. */
  timestamp?: string | Date;
  /** Default: a UUIDv7 made when the event is queued, so retries are stored exactly once. */
  eventId?: string;
  bucket?: string;
  objectKey?: string;
  versionId?: string;
  bytes?: number;
  isBillableEgress?: boolean;
  objectCategory?: string;
  copySource?: CopySource;
  resultingDeleteMarkerVersionId?: string;
  hardDeletedVersionId?: string;
  deletedObjects?: DeletedObject[];
  objectKeyPrefix?: string;
  uploadId?: string;
  partNumber?: number;
  force?: boolean;
  [extra: string]: unknown;
}

/** A field error as the server reports it for a rejected event. */
export interface FieldError {
  path: string;
  message: string;
  expected?: string;
  received?: string;
}

/** What onError receives. One call per occurrence, never one per event of a batch. */
export type MeterError =
  | { kind: 'rejected'; message: string; events: { event: MeterEvent; errors: FieldError[] }[] }
  | { kind: 'permanent'; message: string; status: number; events: number }
  | { kind: 'dropped'; message: string; events: number }
  | { kind: 'retrying'; message: string; attempt: number; delayMs: number }
  | { kind: 'instrumentation'; message: string; cause?: unknown };

export interface MeterStats {
  /** Events accepted by track() and not yet answered by the server (in flight included). */
  queued: number;
  /** Events the server stored (new) or already had (duplicates of a retried batch). */
  sent: number;
  /** Of `sent`, those the server answered as duplicates. */
  duplicates: number;
  /** Events sent again after a failed attempt (network error, 429, 5xx). */
  retried: number;
  /** Events the server refused for their content (the batch reply's `rejected`), never retried. */
  rejected: number;
  /** Events given up on: queue full, a permanent 401/403/413, or still queued when close() timed out. */
  dropped: number;
}
