// mp_proxy_redis_reachable, the Redis-unreachable alert's gauge: 1 while a real Redis answers, 0
// once it is gone (the scrape itself does not hang on the dead connection).
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { registerRedisReachable } from './redis-reachable.ts';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

const reachable = async (registry: Registry) =>
  (await registry.getSingleMetric('mp_proxy_redis_reachable')?.get())?.values[0]?.value;

describe('mp_proxy_redis_reachable', () => {
  it('reads 1 while Redis answers and 0 at the first scrape after it died', async () => {
    const registry = new Registry();
    registerRedisReachable(registry, redis.client());
    expect(await reachable(registry)).toBe(1);
    expect(await registry.metrics()).toContain('mp_proxy_redis_reachable 1');
    await redis.kill();
    expect(await reachable(registry)).toBe(0);
    await redis.restart();
  });
});
