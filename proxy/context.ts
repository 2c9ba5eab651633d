// Everything a route needs, built once by app.ts from the injected clients and config, and handed
// to route plugins as an option (no globals, so tests build as many apps as they like).

import type { Metering } from '../core/billing/index.ts';
import type { CatalogueSnapshot } from '../core/catalogue/index.ts';
import type { Config } from '../core/config.ts';
import type { KeyCache } from './auth/key-cache.ts';
import type { BalanceView } from './billing/balance-view.ts';
import type { CreditLeases } from './billing/leases.ts';
import type { EngineDeps } from './engine/call.ts';
import type { ProxyMetrics } from './plugins/metrics.ts';

export interface ProxyContext {
  config: Config;
  catalogue: CatalogueSnapshot;
  keyCache: KeyCache;
  metering: Metering;
  balances: BalanceView;
  /** This replica's credit leases (PROXY_LEASES); null reserves every request in Redis. */
  leases: CreditLeases | null;
  metrics: ProxyMetrics;
  engine: EngineDeps;
  /** Settlements still running; shutdown waits for them. */
  pendingSettlements: Set<Promise<unknown>>;
}
