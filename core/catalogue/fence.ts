// Fenced catalogue writes: what keeps a deposed operator leader from writing. Each leadership term
// carries a token that only grows (the operator uses its Lease's leaseTransitions); Redis keeps the
// newest token that wrote, and every write is one script that compares the writer's token with it
// in the same step as the write. A stale leader — one that does not yet know it was deposed, its
// API connection hung, its cache old — is refused by Redis itself, whatever it believes.
//
// The fence only ratchets up: a write (or a claim) with a newer token raises it. A new leader
// claims before its first reconcile, so the old one is refused from that moment, not only from the
// new leader's first real write. The fence key shares the catalogue's slot (core/redis/keyspace.ts), so
// the script is one slot on Redis Cluster too. The change is announced after the script, as
// CatalogueStore does; a lost announcement is healed by the proxies' periodic reload.

import { publish, type Redis } from '../redis/client.ts';
import { channels, globalKeys } from '../redis/keyspace.ts';
import { LuaScript } from '../redis/lua.ts';
import { type CatalogueEntryInput, catalogueEntrySchema, catalogueKey } from './entry.ts';

// KEYS: catalogue hash, fence. ARGV: token, op (claim | put | remove), field, value.
// Returns {1, changed} when written, {0, fence} when refused (the fence is newer than the token).
const fencedWrite = new LuaScript(
  `
local token = tonumber(ARGV[1])
local fence = tonumber(redis.call('GET', KEYS[2]) or '0')
if token == nil or token < fence then return {0, fence} end
if token > fence then redis.call('SET', KEYS[2], ARGV[1]) end
if ARGV[2] == 'put' then
  redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
  return {1, 1}
end
if ARGV[2] == 'remove' then return {1, redis.call('HDEL', KEYS[1], ARGV[3])} end
return {1, 0}
`,
  'catalogue-fenced-write',
);

/** Redis refused a write: a newer leadership term has written (or claimed) the catalogue since. */
export class StaleTermError extends Error {
  constructor(
    readonly token: number,
    readonly fence: number,
  ) {
    super(`catalogue write refused: term ${token} is older than the catalogue's fence ${fence}`);
    this.name = 'StaleTermError';
  }
}

export const isStaleTerm = (err: unknown): err is StaleTermError => err instanceof StaleTermError;

export class FencedCatalogue {
  constructor(private readonly redis: Redis) {}

  /** Raises the fence to `token` without writing an entry: from now on older terms are refused. */
  async claim(token: number): Promise<void> {
    await this.run(token, 'claim', '', '');
  }

  /** Writes (or replaces) an entry under `token` and announces it. */
  async put(input: CatalogueEntryInput, token: number): Promise<void> {
    const entry = catalogueEntrySchema.parse(input);
    const key = catalogueKey(entry.id);
    await this.run(token, 'put', key, JSON.stringify(entry));
    await publish(this.redis, channels.catalogueChanged, key);
  }

  /** Removes an entry under `token`; true when there was one. */
  async remove(id: string, token: number): Promise<boolean> {
    const key = catalogueKey(id);
    const removed = (await this.run(token, 'remove', key, '')) > 0;
    if (removed) await publish(this.redis, channels.catalogueChanged, key);
    return removed;
  }

  /** The newest term that wrote or claimed (0 when none has). */
  async fence(): Promise<number> {
    return Number((await this.redis.get(globalKeys.catalogueFence)) ?? 0);
  }

  private async run(token: number, op: string, field: string, value: string): Promise<number> {
    if (!Number.isSafeInteger(token) || token < 0) throw new Error(`invalid leadership term ${token}`);
    const keys = [globalKeys.catalogue, globalKeys.catalogueFence];
    const [written, n] = (await fencedWrite.run(this.redis, keys, [token, op, field, value])) as [
      number,
      number,
    ];
    if (written !== 1) throw new StaleTermError(token, n);
    return n;
  }
}
