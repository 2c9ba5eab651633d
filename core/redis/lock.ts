// A lock in Redis that one process of a fleet holds at a time, for work that must run once (the
// hold sweeper): SET NX with a ttl, renewed by its holder, given up on shutdown, taken over by
// another process when the holder dies and the ttl passes. The ttl is Redis's, so clocks of the
// fleet's machines never decide who holds it.
import { randomBytes } from 'node:crypto';
import type { Redis } from './client.ts';
import { LuaScript } from './lua.ts';

const acquireOrRenew = new LuaScript(
  `if redis.call('GET', KEYS[1]) == ARGV[1] then
     redis.call('PEXPIRE', KEYS[1], ARGV[2])
     return 1
   end
   if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
   return 0`,
  'lock-acquire',
);

const release = new LuaScript(
  `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
   return 0`,
  'lock-release',
);

export class RedisLock {
  readonly token = randomBytes(12).toString('hex');

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    private readonly ttlMs: number,
  ) {}

  /** True when this process holds the lock now (it was free, or already ours and is renewed). */
  async acquireOrRenew(): Promise<boolean> {
    return (await acquireOrRenew.run(this.redis, [this.key], [this.token, this.ttlMs])) === 1;
  }

  async release(): Promise<void> {
    await release.run(this.redis, [this.key], [this.token]);
  }
}
