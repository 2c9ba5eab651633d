// Every part refuses a Redis that may evict keys. Under memory pressure an evicting policy drops
// keys silently: idempotency records first (they carry ttls, so volatile-* policies pick them),
// then holds, balances, unarchived usage — and a resent settlement would then be charged twice.
// `noeviction` makes a full Redis refuse writes instead, which the proxy answers with a retryable
// error and its outbox keeps what it owes. INFO is read, not CONFIG GET: managed Redis services
// often disable CONFIG. On a Redis Cluster every primary is asked: each holds its own accounts.
import { primaries, type Redis, whenReady } from './client.ts';

export async function requireNoEviction(redis: Redis, part: string): Promise<void> {
  await whenReady(redis);
  for (const server of primaries(redis)) await requireOf(server, part);
}

async function requireOf(redis: Pick<Redis, 'info'>, part: string): Promise<void> {
  const info = await redis.info('memory');
  const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
  if (policy === undefined) throw new Error(`${part}: cannot read Redis's maxmemory-policy from INFO memory`);
  if (policy !== 'noeviction')
    throw new Error(
      `${part} refuses this Redis: its maxmemory-policy is ${policy}, and an evicting Redis silently drops idempotency records, holds, balances and usage not yet archived under memory pressure (a retried settlement would be charged twice). Set maxmemory-policy noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction).`,
    );
}
