/**
 * A real bucketmeter for the package's tests: the repository's own server, started as its tests
 * start it (test/support of the root, compiled by the root build that `npm test` runs first).
 */
/** What these tests use of the root helpers' objects (their full types live in the root's test/support). */
export type ServerProcess = { url: string; port: number; bootstrapKey: string | undefined; kill(): Promise<void>; stop(): Promise<number | null>; output(): string };
export type TcpProxy = { port: number; cut(): void; restore(): void; close(): Promise<void> };

const ROOT = new URL('../../../../../', import.meta.url);

const server = (await import(new URL('dist/test/support/server.js', ROOT).href)) as {
  startServer(options?: { dataDir?: string; args?: string[] }): Promise<ServerProcess>;
  tempDir(prefix?: string): string;
  createKey(tenant: string, storeArgs: string[]): Promise<string>;
};
const proxy = (await import(new URL('dist/test/support/tcp-proxy.js', ROOT).href)) as {
  startTcpProxy(host: string, port: number): Promise<TcpProxy>;
};

export const { startServer, tempDir, createKey } = server;
export const { startTcpProxy } = proxy;

/** Every stored event of the key's tenant, by eventId, read through GET /v1/events page by page. */
export async function storedEvents(url: string, key: string): Promise<[stored: Map<string, Record<string, unknown>>, doubles: Map<string, Record<string, unknown>>]> {
  const byId = new Map<string, Record<string, unknown>>();
  const doubles = new Map<string, Record<string, unknown>>();
  let cursor: string | undefined;
  do {
    const page = new URL('/v1/events', url);
    page.searchParams.set('limit', '1000');
    if (cursor !== undefined) page.searchParams.set('cursor', cursor);
    const response = await fetch(page, { headers: { 'x-api-key': key } });
    if (response.status !== 200) throw new Error(`GET /v1/events: ${response.status} ${await response.text()}`);
    const body = (await response.json()) as { events: Record<string, unknown>[]; nextCursor?: string | null };
    for (const event of body.events) {
      const id = String(event.eventId);
      if (byId.has(id)) doubles.set(id, event);
      byId.set(id, event);
    }
    cursor = body.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return [byId, doubles];
}
