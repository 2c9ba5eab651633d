// Deletes stored media past its time (images past their URL's life, videos past retention). One
// replica sweeps at a time (a Redis lock, as the hold sweeper), working from one sorted set of
// due times, so its cost is proportional to what expires.

import type { Redis } from '../../core/redis/client.ts';
import { globalKeys } from '../../core/redis/keyspace.ts';
import { RedisLock } from '../../core/redis/lock.ts';
import type { ObjectStore } from '../../core/storage/store.ts';

/** Files `key` for deletion at `atMs`. */
export async function deleteLater(redis: Redis, key: string, atMs: number): Promise<void> {
  await redis.zadd(globalKeys.mediaDue, atMs, key);
}

/** Deletes what is due; returns the keys deleted. */
export async function sweepMedia(
  redis: Redis,
  store: ObjectStore,
  nowMs = Date.now(),
  batch = 100,
): Promise<string[]> {
  const due = await redis.zrangebyscore(globalKeys.mediaDue, '-inf', nowMs, 'LIMIT', 0, batch);
  for (const key of due) {
    await store.delete(key);
    await redis.zrem(globalKeys.mediaDue, key);
  }
  return due;
}

export function startMediaSweeper(
  redis: Redis,
  store: ObjectStore,
  o: { intervalMs: number; lockTtlMs: number; onError(err: unknown): void },
): () => Promise<void> {
  const lock = new RedisLock(redis, globalKeys.mediaSweeperLock, o.lockTtlMs);
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    lock
      .acquireOrRenew()
      .then(async (mine) => {
        if (mine) await sweepMedia(redis, store);
      })
      .catch(o.onError)
      .finally(() => {
        running = false;
      });
  }, o.intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await lock.release().catch(() => {});
  };
}
