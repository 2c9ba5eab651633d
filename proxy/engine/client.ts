// HTTP to engines: one undici Pool per endpoint origin, kept alive across requests, so a request
// never pays for a TCP handshake. Pools are created on first use and closed with the app.

import type { Dispatcher } from 'undici';
import { Pool } from 'undici';

export interface EngineClientOptions {
  connections: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
}

export interface EngineResponse {
  statusCode: number;
  body: Dispatcher.ResponseData['body'];
}

export class EngineClient {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly options: EngineClientOptions) {}

  /** POSTs JSON to `<baseUrl><path>`; `baseUrl` may carry a path prefix (an external gateway). */
  async postJson(
    baseUrl: string,
    path: string,
    payload: string,
    signal: AbortSignal,
  ): Promise<EngineResponse> {
    const url = new URL(baseUrl);
    const prefix = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
    const res = await this.pool(url.origin).request({
      method: 'POST',
      path: `${prefix}${path}`,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: payload,
      signal,
    });
    return { statusCode: res.statusCode, body: res.body };
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
    await Promise.all(pools.map((p) => p.close().catch(() => p.destroy())));
  }
}
