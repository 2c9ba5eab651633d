// Prefix-cache routing for one proxy replica, from config, kept in step with the catalogue. Each
// replica subscribes to every engine's events itself: no shared state to coordinate, and the index
// is as fresh as the events (docs/routing.md says why not Redis).
import type { CatalogueSnapshot } from '../../../core/catalogue/index.ts';
import type { ProxyConfig as Config } from '../../../core/config/index.ts';
import type { FeedLog } from './feed.ts';
import { PrefixRouting } from './prefix-routing.ts';

export function prefixRouting(
  config: Config,
  catalogue: CatalogueSnapshot,
  log: FeedLog,
  /** This replica's requests in flight per endpoint (the picker's count). */
  inFlight: (url: string) => number,
): PrefixRouting | undefined {
  if (!config.PROXY_ROUTING_KV_EVENTS) return undefined;
  const routing = new PrefixRouting({
    weights: {
      prefillUsPerToken: config.PROXY_ROUTING_PREFILL_US_PER_TOKEN,
      loadMs: config.PROXY_ROUTING_LOAD_MS,
      waitingMs: config.PROXY_ROUTING_WAITING_MS,
      kvFullMs: config.PROXY_ROUTING_KV_FULL_MS,
    },
    metrics: {
      intervalMs: config.PROXY_ROUTING_METRICS_MS,
      staleMs: config.PROXY_ROUTING_METRICS_STALE_MS,
      inFlight,
    },
    maxBlocksPerModel: config.PROXY_ROUTING_INDEX_BLOCKS,
    tokenize: {
      threads: config.PROXY_ROUTING_TOKENIZE_THREADS,
      queue: config.PROXY_ROUTING_TOKENIZE_QUEUE,
      budgetMs: config.PROXY_ROUTING_TOKENIZE_BUDGET_MS,
      cacheTokens: config.PROXY_ROUTING_TOKENIZE_CACHE_TOKENS,
    },
    hub: {
      url: config.PROXY_TOKENIZER_HUB_URL,
      ...(config.PROXY_TOKENIZER_HUB_TOKEN ? { token: config.PROXY_TOKENIZER_HUB_TOKEN } : {}),
    },
    log,
  });
  routing.follow(catalogue);
  return routing;
}
