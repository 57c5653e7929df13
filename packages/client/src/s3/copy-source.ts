/** CopySource as S3 takes it: "bucket/key[?versionId=v]", URL-encoded, optionally with a leading "/" or an access-point ARN. */
import type { CopySource } from '../types.js';

const ACCESS_POINT = /^arn:[^:]+:s3:[^:]*:[^:]*:accesspoint\/([^/]+)\/object\/(.+)$/;

export function parseCopySource(raw: unknown): CopySource | undefined {
  if (typeof raw !== 'string' || raw === '') return undefined;
  let path = raw;
  let versionId: string | undefined;
  const query = path.indexOf('?');
  if (query >= 0) {
    versionId = new URLSearchParams(path.slice(query + 1)).get('versionId') ?? undefined;
    path = path.slice(0, query);
  }
  let bucket: string;
  let key: string;
  const arn = ACCESS_POINT.exec(path);
  if (arn !== null) {
    [bucket, key] = [arn[1]!, arn[2]!];
  } else {
    if (path.startsWith('/')) path = path.slice(1);
    const slash = path.indexOf('/');
    if (slash <= 0 || slash === path.length - 1) return undefined;
    [bucket, key] = [path.slice(0, slash), path.slice(slash + 1)];
  }
  const source: CopySource = { bucket: decode(bucket), objectKey: decode(key) };
  if (versionId !== undefined && versionId !== '') source.versionId = versionId;
  return source;
}

/** A key that is not valid percent-encoding was sent as is: keep it as is. */
function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** "bytes=first-last" → the number of bytes in the range. */
export function rangeLength(range: unknown): number | undefined {
  if (typeof range !== 'string') return undefined;
  const m = /^bytes=(\d+)-(\d+)$/.exec(range.trim());
  return m === null ? undefined : Number(m[2]) - Number(m[1]) + 1;
}
