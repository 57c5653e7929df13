/** The storage provider and (for AWS) the region, from the host the request went to. */

const SUFFIXES: readonly [suffix: string, provider: string][] = [
  ['amazonaws.com', 'aws'],
  ['amazonaws.com.cn', 'aws'],
  ['backblazeb2.com', 'backblaze'],
  ['wasabisys.com', 'wasabi'],
  ['r2.cloudflarestorage.com', 'cloudflare'],
  ['storage.googleapis.com', 'gcp'],
  ['digitaloceanspaces.com', 'digitalocean'],
];

/** Provider of hosts none of the suffixes match, unless the `provider` option says. */
export const UNKNOWN_PROVIDER = 'other';

let lastHost: string | undefined;
let lastProvider: string | undefined;

export function providerOfHost(host: string | undefined): string | undefined {
  if (host === undefined) return undefined;
  // An application talks to one or a few hosts: the last answer is kept, as every S3 call asks.
  if (host !== lastHost) {
    const h = host.toLowerCase();
    lastProvider = SUFFIXES.find(([suffix]) => h === suffix || h.endsWith('.' + suffix))?.[1];
    lastHost = host;
  }
  return lastProvider;
}

/** s3.<region>.amazonaws.com, s3-<region>..., <bucket>.s3.<region>..., s3.dualstack.<region>...; plain s3.amazonaws.com is us-east-1. */
export function awsRegionOfHost(host: string | undefined): string | undefined {
  if (host === undefined || providerOfHost(host) !== 'aws') return undefined;
  const labels = host.toLowerCase().split('.');
  const at = labels.findIndex((l) => l === 's3' || l.startsWith('s3-'));
  if (at < 0) return undefined;
  const label = labels[at]!;
  if (label.startsWith('s3-')) return label === 's3-external-1' ? 'us-east-1' : label.slice(3);
  const next = labels[at + 1] === 'dualstack' ? labels[at + 2] : labels[at + 1];
  return next === 'amazonaws' ? 'us-east-1' : next;
}
