// Whether this replica's Redis answers: a PING bounded in time, so a hung Redis (one that accepts
// and never replies) reads as unreachable rather than stalling the caller. /readyz asks it on every
// probe; the gauge mp_proxy_redis_reachable asks it at every scrape, for the "Redis unreachable"
// alert (charts/modelplane/files/prometheus-rules.yaml).

import { Gauge, type Registry } from 'prom-client';
import type { Redis } from '../../core/redis-client.ts';

export function redisAnswers(redis: Redis, timeoutMs = 1000): Promise<boolean> {
  return Promise.race([
    redis.ping().then(
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
