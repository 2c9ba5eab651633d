// Failed sign-ins counted per email and per client address in a fixed 15-minute window, in Redis
// so every console replica sees the same count. Past either limit, sign-in is refused (429)
// before the password is even checked, so a guesser cannot tell a right password from a wrong one.
import type { Redis } from 'ioredis';
import { globalKeys } from '../core/keyspace.ts';
import { normalizeEmail } from '../core/users.ts';

const WINDOW_MS = 15 * 60_000;

export class SignInThrottle {
  constructor(
    private readonly redis: Redis,
    private readonly perEmail: number,
    private readonly perAddress: number,
  ) {}

  private keys(email: string, address: string) {
    return [
      globalKeys.signInFailures('email', normalizeEmail(email)),
      globalKeys.signInFailures('addr', address),
    ];
  }

  /** True when this email or this address has failed too often in the window. */
  async blocked(email: string, address: string): Promise<boolean> {
    const [e, a] = await this.redis.mget(...this.keys(email, address));
    return Number(e ?? 0) >= this.perEmail || Number(a ?? 0) >= this.perAddress;
  }

  async failed(email: string, address: string): Promise<void> {
    const m = this.redis.multi();
    for (const k of this.keys(email, address)) m.incr(k).pexpire(k, WINDOW_MS, 'NX');
    await m.exec();
  }

  /** A good sign-in clears the email's count (not the address's: one good account should not launder guesses). */
  async succeeded(email: string): Promise<void> {
    await this.redis.del(globalKeys.signInFailures('email', normalizeEmail(email)));
  }
}
