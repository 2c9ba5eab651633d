// HTTP to engines: one undici Pool per endpoint origin, kept alive across requests, so a request
// never pays for a TCP handshake. Pools are created on first use and closed with the app.
// Requests go through undici's dispatch API with a handler of our own that pushes body chunks into
// an EngineBody (./body.ts): no Readable and no async iteration per response.

import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { Pool } from 'undici';
import { EngineBody } from './body.ts';
import type { Cancel } from './cancel.ts';

export interface EngineClientOptions {
  connections: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
}

export interface EngineResponse {
  statusCode: number;
  body: EngineBody;
}

interface Target {
  pool: Pool;
  /** Path prefix of the base URL ('' for none): an external gateway may live under one. */
  prefix: string;
}

const requestHeaders = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};

export class EngineClient {
  private readonly pools = new Map<string, Pool>();
  /** Parsed base URLs: a URL parse per request showed in profiles. */
  private readonly targets = new Map<string, Target>();

  constructor(private readonly options: EngineClientOptions) {}

  /**
   * POSTs JSON to `<baseUrl><path>`, with `headers` besides the usual ones (an idempotency key);
   * resolves with the status once the response head is in.
   */
  postJson(
    baseUrl: string,
    path: string,
    payload: string,
    cancel: Cancel,
    headers?: Record<string, string>,
  ): Promise<EngineResponse> {
    const target = this.target(baseUrl);
    return new Promise((resolve, reject) => {
      const exchange = new Exchange(resolve, reject, cancel);
      target.pool.dispatch(
        {
          method: 'POST',
          path: `${target.prefix}${path}`,
          headers: headers === undefined ? requestHeaders : { ...requestHeaders, ...headers },
          body: payload,
        },
        exchange,
      );
    });
  }

  /**
   * POSTs a streamed body (a multipart form of media files read from disk as they are sent) or
   * GETs (`body` null); resolves once the response head is in.
   */
  send(
    baseUrl: string,
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body: { stream: Readable; contentType: string } | null,
    cancel: Cancel,
    headers?: Record<string, string>,
  ): Promise<EngineResponse> {
    const target = this.target(baseUrl);
    return new Promise((resolve, reject) => {
      const exchange = new Exchange(resolve, reject, cancel);
      target.pool.dispatch(
        {
          method,
          path: `${target.prefix}${path}`,
          headers: {
            ...(body ? { 'content-type': body.contentType, accept: 'application/json' } : { accept: '*/*' }),
            ...headers,
          },
          body: body?.stream ?? null,
        },
        exchange,
      );
    });
  }

  private target(baseUrl: string): Target {
    let t = this.targets.get(baseUrl);
    if (t === undefined) {
      const url = new URL(baseUrl);
      const prefix = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
      t = { pool: this.pool(url.origin), prefix };
      this.targets.set(baseUrl, t);
    }
    return t;
  }

  private pool(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: this.options.connections,
        headersTimeout: this.options.headersTimeoutMs,
        bodyTimeout: this.options.bodyTimeoutMs,
        // Below the engines' own idle limits (uvicorn under vLLM and SGLang: 5 s; llama.cpp's
        // httplib: 5 s): a connection kept longer is one the engine may close just as a request
        // is written on it, which fails before the first byte — with one endpoint, a 5xx (seen in
        // front of llama-server, bench/RESULTS.md "Real engine"). undici's own default is 4 s.
        keepAliveTimeout: 4_000,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    this.targets.clear();
    await Promise.all(pools.map((p) => p.close().catch(() => p.destroy())));
  }
}

/**
 * One request's dispatch handler: resolves at the response head, then feeds the body. It speaks
 * undici's older handler interface (onConnect, onHeaders, onData, …), the one undici's own
 * `request()` uses: a handler of the newer kind (onRequestStart, onResponseStart, …) is wrapped per
 * request in an adapter that parses the response's headers and trailers into objects, which the
 * proxy never reads. Pausing is what the adapter does: onData answers false, resume() resumes.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private abortRequest: ((err?: Error) => void) | null = null;
  private resumeBody: (() => void) | null = null;
  private paused = false;
  private body: EngineBody | null = null;
  private settled = false;
  private readonly onAbort = () => this.abort();

  constructor(
    private readonly resolve: (r: EngineResponse) => void,
    private readonly reject: (err: unknown) => void,
    private readonly cancel: Cancel,
  ) {
    cancel.onAbort(this.onAbort);
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abortRequest = abort;
    if (this.cancel.aborted) abort(asError(this.cancel.reason));
  }

  onHeaders(statusCode: number, _rawHeaders: Buffer[], resume: () => void): boolean {
    if (statusCode < 200 || this.settled) return true; // 1xx informational: the real head follows
    this.resumeBody = resume;
    const body = new EngineBody({
      pause: () => {
        this.paused = true;
      },
      resume: () => {
        if (!this.paused) return;
        this.paused = false;
        this.resumeBody?.();
      },
      abort: (reason) => this.abortRequest?.(reason),
    });
    this.body = body;
    this.settled = true;
    this.resolve({ statusCode, body });
    return !this.paused;
  }

  onData(chunk: Buffer): boolean {
    this.body?.push(chunk);
    return !this.paused;
  }

  onComplete(): void {
    this.cancel.off(this.onAbort);
    this.body?.finish();
  }

  onError(err: Error): void {
    this.cancel.off(this.onAbort);
    const reason = this.cancel.aborted ? asError(this.cancel.reason) : err;
    if (!this.settled) {
      this.settled = true;
      this.reject(reason);
      return;
    }
    this.body?.fail(reason);
  }

  /** The caller cancelled: before the head, the promise rejects at once (even if queued). */
  private abort(): void {
    const reason = asError(this.cancel.reason);
    this.abortRequest?.(reason);
    if (!this.settled) {
      this.settled = true;
      this.reject(reason);
    }
  }
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason ?? 'aborted'));
}
