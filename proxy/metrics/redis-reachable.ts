// Whether this replica's Redis answers: a PING bounded in time, so a hung Redis (one that accepts
// and never replies) reads as unreachable rather than stalling the caller. /readyz asks it on every
// probe; the gauge mp_proxy_redis_reachable asks it at every scrape, for the "Redis unreachable"
// alert (charts/modelplane/files/prometheus-rules.yaml).

import { Gauge, type Registry } from 'prom-client';
import { isCluster, primaries, type Redis } from '../../core/redis/client.ts';

export function redisAnswers(redis: Redis, timeoutMs = 1000): Promise<boolean> {
  // On a Redis Cluster a PING goes to any node — a dead primary's during a failover, which would
  // turn every replica unready for one shard's outage (issue 38): Redis answers when a primary does.
  const ping = isCluster(redis) ? Promise.any(primaries(redis).map((p) => p.ping())) : redis.ping();
  return Promise.race([
    ping.then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((r) => setTimeout(() => r(false), timeoutMs).unref()),
  ]);
}

export function registerRedisReachable(registry: Registry, redis: Redis): void {
  new Gauge({
    name: 'mp_proxy_redis_reachable',
    help: "1 when this replica's Redis answered a PING within a second at scrape time, else 0",
    registers: [registry],
    async collect() {
      this.set((await redisAnswers(redis)) ? 1 : 0);
    },
  });
}
