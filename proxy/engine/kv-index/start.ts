// Prefix-cache routing for one proxy replica, from config, kept in step with the catalogue. Each
// replica subscribes to every engine's events itself: no shared state to coordinate, and the index
// is as fresh as the events (docs/routing.md says why not Redis).
import type { CatalogueSnapshot } from '../../../core/catalogue/index.ts';
import type { Config } from '../../../core/config.ts';
import type { FeedLog } from './feed.ts';
import { PrefixRouting } from './prefix-routing.ts';

export function prefixRouting(
  config: Config,
  catalogue: CatalogueSnapshot,
  log: FeedLog,
): PrefixRouting | undefined {
  if (!config.PROXY_ROUTING_KV_EVENTS) return undefined;
  const routing = new PrefixRouting({
    weights: {
      prefillUsPerToken: config.PROXY_ROUTING_PREFILL_US_PER_TOKEN,
      loadMs: config.PROXY_ROUTING_LOAD_MS,
    },
    maxBlocksPerModel: config.PROXY_ROUTING_INDEX_BLOCKS,
    log,
  });
  routing.follow(catalogue);
  return routing;
}
