// Failed sign-ins counted per (email, client address) and per client address in a fixed 15-minute
// window, in Redis so every console replica sees the same count. Past either limit, sign-in from
// that address is refused (429) before the password is even checked, so a guesser cannot tell a
// right password from a wrong one. Counting an email's failures per address (issue 24 item 3)
// means failures from one address cannot lock the user out from the others: a stranger who types
// wrong passwords for the owner's email blocks only themselves. The address is the one fastify
// derives from CONSOLE_TRUSTED_PROXIES, so a client cannot pick a fresh one per try.

import { normalizeEmail } from '../core/accounts/users.ts';
import type { Redis } from '../core/redis/client.ts';
import { globalKeys } from '../core/redis/keyspace.ts';

const WINDOW_MS = 15 * 60_000;

export class SignInThrottle {
  constructor(
    private readonly redis: Redis,
    private readonly perEmail: number,
    private readonly perAddress: number,
  ) {}

  private emailAtAddress(email: string, address: string) {
    return globalKeys.signInFailures('email-addr', `${normalizeEmail(email)} ${address}`);
  }

  private keys(email: string, address: string) {
    return [this.emailAtAddress(email, address), globalKeys.signInFailures('addr', address)];
  }

  /** True when this email has failed too often from this address, or this address too often at all. */
  async blocked(email: string, address: string): Promise<boolean> {
    // Two keys of two slots: two GETs, not MGET, so this runs on Redis Cluster too.
    const [e, a] = await Promise.all(this.keys(email, address).map((k) => this.redis.get(k)));
    return Number(e ?? 0) >= this.perEmail || Number(a ?? 0) >= this.perAddress;
  }

  async failed(email: string, address: string): Promise<void> {
    await Promise.all(
      this.keys(email, address).map((k) => this.redis.multi().incr(k).pexpire(k, WINDOW_MS, 'NX').exec()),
    );
  }

  /**
   * A good sign-in clears the email's count at that address (not the address's: one good account
   * should not launder guesses at others).
   */
  async succeeded(email: string, address: string): Promise<void> {
    await this.redis.del(this.emailAtAddress(email, address));
  }
}
