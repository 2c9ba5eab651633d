// Everything a route needs, built once by app.ts from the injected clients and config, and handed
// to route plugins as an option (no globals, so tests build as many apps as they like).

import type { CatalogueSnapshot } from '../core/catalogue/index.ts';
import type { ProxyConfig as Config } from '../core/config/index.ts';
import type { Redis } from '../core/redis/client.ts';
import type { ObjectStore } from '../core/storage/store.ts';
import type { UrlSigner } from '../core/storage/url-signer.ts';
import type { KeyCache } from './auth/key-cache.ts';
import type { Billing } from './billing/billing.ts';
import type { EngineDeps } from './engine/call.ts';
import type { ProxyMetrics } from './metrics/metrics.ts';

export interface ProxyContext {
  config: Config;
  catalogue: CatalogueSnapshot;
  keyCache: KeyCache;
  /** Every call's money goes through it (billing/charge.ts: `ctx.billing.open`). */
  billing: Billing;
  metrics: ProxyMetrics;
  engine: EngineDeps;
  /** Generated media: where files are kept, and the signer of the proxy's own /files links. */
  media: { store: ObjectStore; signer: UrlSigner; redis: Redis };
  /** Readiness: false once shutdown began (load balancers stop sending). */
  serving: { ready: boolean };
}
