// Demand for a model's capacity, as the proxies see it (issue 32, DESIGN "One writer of
// `replicas`"): requests in an engine (inFlight), waiting in a proxy's fair queue for a saturated
// fleet (queued), and held for a model with no ready endpoint (held). Each proxy replica publishes
// its own counts every interval into one expiring hash; the operator's leader sums the live ones.
// A replica that dies stops refreshing its hash, which expires: its demand leaves the sum without
// anyone clearing it, and no clock is compared across machines (Redis' own TTL decides).

import type { Redis } from '../redis/client.ts';
import { globalKeys } from '../redis/keyspace.ts';

export interface Demand {
  inFlight: number;
  queued: number;
  held: number;
}

export const noDemand = (): Demand => ({ inFlight: 0, queued: 0, held: 0 });
export const totalDemand = (d: Demand) => d.inFlight + d.queued + d.held;

/** `inFlight queued held`, the hash's value format (three integers, space-separated). */
export function encodeDemand(d: Demand): string {
  return `${d.inFlight} ${d.queued} ${d.held}`;
}

export function decodeDemand(value: string): Demand | null {
  const parts = value.split(' ').map(Number);
  if (parts.length !== 3 || !parts.every((n) => Number.isInteger(n) && n >= 0)) return null;
  return { inFlight: parts[0]!, queued: parts[1]!, held: parts[2]! };
}

export class DemandStore {
  constructor(private readonly redis: Redis) {}

  /**
   * Replaces this replica's counts: the whole hash at once (a model no longer wanted leaves it),
   * with a TTL of `ttlMs`. Models with no demand are left out, so an idle replica has no hash.
   */
  async publish(proxyId: string, byModel: ReadonlyMap<string, Demand>, ttlMs: number): Promise<void> {
    const key = globalKeys.demandOf(proxyId);
    const fields: string[] = [];
    for (const [model, d] of byModel) if (totalDemand(d) > 0) fields.push(model, encodeDemand(d));
    const tx = this.redis.multi().del(key);
    if (fields.length > 0) tx.hset(key, ...fields).pexpire(key, ttlMs);
    tx.sadd(globalKeys.demandProxies, proxyId);
    await tx.exec();
  }

  /** This replica leaves (shutdown): its demand goes at once instead of at its TTL. */
  async withdraw(proxyId: string): Promise<void> {
    await this.redis.multi().del(globalKeys.demandOf(proxyId)).srem(globalKeys.demandProxies, proxyId).exec();
  }

  /**
   * The sum over every live replica, per model id, and how many replicas had demand. Members whose
   * hash is gone (expired, or idle) are pruned from the set as they are found.
   */
  async read(except?: string): Promise<{ byModel: Map<string, Demand>; proxies: number }> {
    // `except`: a replica that reads its own demand live (the batch runner) leaves its hash out.
    const ids = (await this.redis.smembers(globalKeys.demandProxies)).filter((id) => id !== except);
    const byModel = new Map<string, Demand>();
    if (ids.length === 0) return { byModel, proxies: 0 };
    const pipe = this.redis.pipeline();
    for (const id of ids) pipe.hgetall(globalKeys.demandOf(id));
    const results = (await pipe.exec()) ?? [];
    const gone: string[] = [];
    let proxies = 0;
    results.forEach(([err, hash], i) => {
      if (err) throw err;
      const fields = Object.entries((hash ?? {}) as Record<string, string>);
      if (fields.length === 0) {
        gone.push(ids[i]!);
        return;
      }
      proxies++;
      for (const [model, value] of fields) {
        const d = decodeDemand(value);
        if (d === null) continue;
        const sum = byModel.get(model) ?? noDemand();
        sum.inFlight += d.inFlight;
        sum.queued += d.queued;
        sum.held += d.held;
        byModel.set(model, sum);
      }
    });
    // A replica with no demand has no hash either; it re-adds itself on its next publish.
    if (gone.length > 0) await this.redis.srem(globalKeys.demandProxies, ...gone);
    return { byModel, proxies };
  }
}
