/**
 * A TCP proxy on loopback between bucketmeter and PostgreSQL, so that tests can cut the database
 * connection mid-load (every socket destroyed, new ones refused), or hang it (nothing forwarded,
 * nothing closed: a network dropping packets), and restore it.
 */
import { createServer, connect } from 'node:net';
import type { Server, Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Destroys every open connection and refuses new ones until restore(). */
  cut(): void;
  /** Forwards nothing, either way, on open and new connections alike, until restore(); closes nothing. */
  hang(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<[client: Socket, upstream: Socket]>();
  let state: 'open' | 'cut' | 'hung' = 'open';
  const forward = ([client, upstream]: [Socket, Socket], on: boolean) => {
    if (on) {
      client.pipe(upstream);
      upstream.pipe(client);
    } else {
      client.unpipe(upstream).pause();
      upstream.unpipe(client).pause();
    }
  };
  const destroyAll = () => {
    for (const [client, upstream] of pairs) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  const server: Server = createServer((client) => {
    if (state === 'cut') {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, targetHost);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    forward(pair, state === 'open');
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    cut: () => {
      state = 'cut';
      destroyAll();
    },
    hang: () => {
      state = 'hung';
      for (const pair of pairs) forward(pair, false);
    },
    restore: () => {
      if (state === 'hung') for (const pair of pairs) forward(pair, true);
      state = 'open';
    },
    close: () =>
      new Promise<void>((done) => {
        state = 'cut';
        destroyAll();
        server.close(() => done());
      }),
  };
}

/** The URL with its host and port replaced by the proxy's. */
export function viaProxy(databaseUrl: string, proxy: TcpProxy): string {
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  return url.toString();
}
