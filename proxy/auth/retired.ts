// Why a key failed, when it is worth saying: a secret that was rotated away or deleted gets a 401
// that says so, instead of "check for a stray space". Only a holder of the real old secret can
// learn it (a guessed key is simply wrong), and only failed authentications ever ask.

import { hashSecret } from '../../core/keys/index.ts';
import type { Redis } from '../../core/redis/client.ts';
import { globalKeys } from '../../core/redis/keyspace.ts';

export class RetiredKeys {
  private readonly seen = new Map<string, { retired: boolean; expires: number }>();

  constructor(
    private readonly redis: Redis,
    private readonly ttlMs = 60_000,
    private readonly max = 10_000,
  ) {}

  async isRetired(secret: string): Promise<boolean> {
    const hash = hashSecret(secret);
    const hit = this.seen.get(hash);
    if (hit && hit.expires > Date.now()) return hit.retired;
    const retired = (await this.redis.exists(globalKeys.retiredKeyHash(hash))) === 1;
    if (this.seen.size >= this.max) this.seen.delete(this.seen.keys().next().value!);
    this.seen.set(hash, { retired, expires: Date.now() + this.ttlMs });
    return retired;
  }
}
