// Releases holds that outlived their ttl (a proxy that crashed between reserve and settle), for
// every account. Each proxy replica runs one; sweeping is idempotent, so replicas may overlap.
import type { Redis } from 'ioredis';
import { globalKeys } from '../keyspace.ts';
import type { Metering } from './metering.ts';

export async function sweepAllExpiredHolds(redis: Redis, metering: Metering): Promise<number> {
  let cursor = '0';
  let released = 0;
  do {
    const [next, ids] = await redis.sscan(globalKeys.accounts, cursor, 'COUNT', 200);
    cursor = next;
    for (const id of ids) released += await metering.sweepExpiredHolds(id);
  } while (cursor !== '0');
  return released;
}

export function startHoldSweeper(
  redis: Redis,
  metering: Metering,
  opts: { intervalMs: number; onError?: (err: unknown) => void; onReleased?: (n: number) => void },
): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweepAllExpiredHolds(redis, metering)
      .then((n) => n > 0 && opts.onReleased?.(n))
      .catch((err) => opts.onError?.(err))
      .finally(() => {
        running = false;
      });
  }, opts.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
