// Renews the holds this replica reserved in Redis (one per call not carved from a lease) for as long
// as their calls run, so a long stream keeps its hold: only a hold whose owner died (or was cut off
// from Redis for longer than the ttl) reaches its expiry and is voided by the sweeper. One renew
// script per account per round (every ttl/3), whatever the number of calls; leases renew themselves
// (./leases.ts).
import type { Metering } from '../../core/billing/index.ts';

export class HoldRenewer {
  private readonly byAccount = new Map<string, Set<string>>();
  private readonly timer: NodeJS.Timeout;
  private running = false;

  constructor(
    private readonly o: {
      metering: Metering;
      ttlMs: number;
      onError: (err: unknown) => void;
      /** Holds found gone at renewal (voided while this replica could not reach Redis). */
      onGone?: (accountId: string, holdIds: string[]) => void;
    },
  ) {
    this.timer = setInterval(() => void this.renewAll(), Math.max(10, Math.floor(o.ttlMs / 3)));
    this.timer.unref();
  }

  track(accountId: string, holdId: string): void {
    const ids = this.byAccount.get(accountId);
    if (ids) ids.add(holdId);
    else this.byAccount.set(accountId, new Set([holdId]));
  }

  forget(accountId: string, holdId: string): void {
    const ids = this.byAccount.get(accountId);
    if (!ids) return;
    ids.delete(holdId);
    if (ids.size === 0) this.byAccount.delete(accountId);
  }

  /** One renewal round (the timer's; tests call it to renew now). */
  async renewAll(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await Promise.all(
        [...this.byAccount].map(async ([accountId, ids]) => {
          try {
            const gone = await this.o.metering.renew(accountId, this.o.ttlMs, [...ids]);
            if (gone.length > 0) this.o.onGone?.(accountId, gone);
          } catch (err) {
            this.o.onError(err);
          }
        }),
      );
    } finally {
      this.running = false;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
