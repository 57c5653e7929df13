/**
 * The Java collector's telemetry bodies, as its TelemetryEvent classes serialize them
 * (dashdive/collector-sdk-java 1.0.10, internal/telemetry): each carries `eventType` and `instanceId`;
 * a TelemetryPayload is a list of items {type, domain?, ...data}.
 */
export const COLLECTOR_INSTANCE_ID = 'c0ffee00-1234-4abc-8def-0123456789ab';
export const COLLECTOR_USER_AGENT = `Java-http-client/17.0.9 v:1.0.10 id:${COLLECTOR_INSTANCE_ID}`;

/** invalidApiKey: sent without X-API-Key, the key itself in the body (twice) and in a failed ping's headers. */
export function invalidApiKeyReport(apiKey: string): Record<string, unknown> {
  return {
    eventType: 'invalid_api_key',
    instanceId: COLLECTOR_INSTANCE_ID,
    apiKey,
    errors: [
      { type: 'API_KEY_INVALID_FORMAT', inputApiKey: apiKey, dashdiveVersion: '1.0.10' },
      { type: 'PING_FAILED', request: { route: 'GET https://ingest.example/ping', headers: { 'X-API-Key': [apiKey] } }, response: { statusCode: 401, body: '', headers: {} } },
    ],
  };
}

export const STARTUP_REPORT = {
  eventType: 'startup',
  instanceId: COLLECTOR_INSTANCE_ID,
  instanceInfo: { classInstanceId: COLLECTOR_INSTANCE_ID, machinePid: '4242', imdRegion: 'eu-west-1', logicalProcessorCount: 4, javaVersion: '17.0.9' },
  warnings: [{ type: 'EMPTY_USER_ATTRS', domain: 'attributeExtractor' }],
};

export const SHUTDOWN_REPORT = {
  eventType: 'shutdown',
  instanceId: COLLECTOR_INSTANCE_ID,
  metricsTotal: { events_enqueued: 1200, events_sent: 1190, events_dropped_send_failure: 10, batches_sent: 6 },
};

export const EXTRACTION_ISSUES_REPORT = {
  eventType: 'extraction_issues',
  instanceId: COLLECTOR_INSTANCE_ID,
  eventsWithIssues: [
    {
      dataPayload: { action: 'Unknown', timestamp: '2024-05-01T12:00:00Z', provider: 'aws', classNames: 'software.amazon.awssdk.services.s3.model.PutBucketTaggingRequest,software.amazon.awssdk.services.s3.model.PutBucketTaggingResponse' },
      hasIrrecoverableErrors: false,
      telemetryWarnings: [{ type: 'UNKNOWN_ACTION_TYPE' }],
      telemetryErrors: [],
    },
    {
      dataPayload: { action: 'PutObject', timestamp: '2024-05-01T12:00:00Z', provider: 'aws', bucket: 'b', objectKey: 'k' },
      hasIrrecoverableErrors: true,
      telemetryWarnings: [],
      telemetryErrors: [{ type: 'EXTRACTION_ERROR', exception: { message: 'NullPointerException' } }],
    },
  ],
};

export const METRICS_REPORT = {
  eventType: 'metrics_incremental',
  instanceId: COLLECTOR_INSTANCE_ID,
  metricsIncremental: { events_enqueued: 500, events_sent: 480, events_dropped_from_queue: 15, events_dropped_send_failure: 5, batches_sent: 3 },
};
