// Every part refuses an evicting Redis at start (core/redis-policy.ts), saying why; the test
// servers and `make dev` run noeviction.
import { describe, expect, it } from 'vitest';
import { redisForFile } from '../test/helpers/redis-per-file.ts';
import { requireNoEviction } from './redis-policy.ts';

const r = redisForFile();

describe('requireNoEviction', () => {
  it('passes a noeviction Redis and refuses any evicting policy, naming it and why', async () => {
    await expect(requireNoEviction(r.redis, 'the proxy')).resolves.toBeUndefined();
    for (const policy of ['allkeys-lru', 'volatile-ttl', 'allkeys-random']) {
      await r.redis.config('SET', 'maxmemory-policy', policy);
      await expect(requireNoEviction(r.redis, 'the proxy')).rejects.toThrow(
        new RegExp(
          `the proxy refuses this Redis: its maxmemory-policy is ${policy}.*idempotency.*noeviction`,
        ),
      );
    }
    await r.redis.config('SET', 'maxmemory-policy', 'noeviction');
    await expect(requireNoEviction(r.redis, 'the console')).resolves.toBeUndefined();
  });
});
