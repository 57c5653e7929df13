/**
 * A real S3Client whose request handler answers from a script instead of the network: the SDK's
 * own serializers, signers, retry logic, middleware and XML parsers all run.
 */
import { Readable } from 'node:stream';
import { S3Client } from '@aws-sdk/client-s3';
import type { S3ClientConfig } from '@aws-sdk/client-s3';

export interface ScriptedReply {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface SentRequest {
  method: string;
  hostname: string;
  path: string;
  headers: Record<string, string>;
}

export const RESPONSE_DATE = 'Mon, 23 Nov 2026 18:48:53 GMT';

export interface ScriptedS3 {
  client: S3Client;
  /** Replies for the next requests, in order; an empty script answers 200 with no body. */
  script: ScriptedReply[];
  sent: SentRequest[];
}

export function scriptedS3(config: S3ClientConfig = {}): ScriptedS3 {
  const script: ScriptedReply[] = [];
  const sent: SentRequest[] = [];
  const client = new S3Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
    maxAttempts: 3,
    retryStrategy: undefined,
    ...config,
    requestHandler: {
      handle: async (request: { method: string; hostname: string; path: string; headers: Record<string, string>; body?: unknown }) => {
        sent.push({ method: request.method, hostname: request.hostname, path: request.path, headers: { ...request.headers } });
        // Consume a streamed body as a real socket would.
        if (request.body instanceof Readable) for await (const _ of request.body) void _;
        const reply = script.shift() ?? {};
        const body = Buffer.from(reply.body ?? '');
        return {
          response: {
            statusCode: reply.status ?? 200,
            headers: { date: RESPONSE_DATE, 'content-length': String(body.length), ...reply.headers },
            body: Readable.from(body.length === 0 ? [] : [body]),
          },
        };
      },
    } as never,
  });
  return { client, script, sent };
}
