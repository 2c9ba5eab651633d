// HTTP to engines: one undici Pool per endpoint origin, kept alive across requests, so a request
// never pays for a TCP handshake. Pools are created on first use and closed with the app.
// Requests go through undici's dispatch API with a handler of our own that pushes body chunks into
// an EngineBody (./body.ts): no Readable and no async iteration per response.

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

  /** POSTs JSON to `<baseUrl><path>`; resolves with the status once the response head is in. */
  postJson(baseUrl: string, path: string, payload: string, cancel: Cancel): Promise<EngineResponse> {
    const target = this.target(baseUrl);
    return new Promise((resolve, reject) => {
      const exchange = new Exchange(resolve, reject, cancel);
      target.pool.dispatch(
        { method: 'POST', path: `${target.prefix}${path}`, headers: requestHeaders, body: payload },
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
        keepAliveTimeout: 30_000,
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

/** One request's dispatch handler: resolves at the response head, then feeds the body. */
class Exchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
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

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.cancel.aborted) controller.abort(asError(this.cancel.reason));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number): void {
    if (statusCode < 200 || this.settled) return; // 1xx informational: the real head follows
    const body = new EngineBody({
      pause: () => controller.pause(),
      resume: () => controller.resume(),
      abort: (reason) => controller.abort(reason),
    });
    this.body = body;
    this.settled = true;
    this.resolve({ statusCode, body });
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.body?.push(chunk);
  }

  onResponseEnd(): void {
    this.cancel.off(this.onAbort);
    this.body?.finish();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
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
    this.controller?.abort(reason);
    if (!this.settled) {
      this.settled = true;
      this.reject(reason);
    }
  }
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason ?? 'aborted'));
}
