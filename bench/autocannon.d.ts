/**
 * The part of autocannon 8's programmatic API the load generator uses. autocannon ships no type
 * declarations and the project adds no dependencies, so they are declared here.
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      /** Called before each send; the returned request is what goes on the wire. */
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request;
      /** Called with each reply's status and body. */
      onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
    }

    interface Options {
      url: string;
      connections?: number;
      pipelining?: number;
      /** Seconds. */
      duration?: number;
      /** Seconds before a request counts as timed out. */
      timeout?: number;
      headers?: Record<string, string>;
      requests?: Request[];
    }

    interface Result {
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      resets: number;
      '1xx': number;
      '2xx': number;
      '3xx': number;
      '4xx': number;
      '5xx': number;
      statusCodeStats: Record<string, { count: number }>;
    }

    interface Instance extends EventEmitter {
      stop(): void;
    }
  }

  function autocannon(options: autocannon.Options, callback: (error: Error | null, result: autocannon.Result) => void): autocannon.Instance;

  export = autocannon;
}
