// The hold sweeper: voids holds and leases whose owner stopped renewing them (a crashed proxy, or one
// cut off from Redis for longer than the ttl), so their money is spendable again and the ledger says
// why. It works from the expiry indexes (globalKeys.holdsDue), so each pass costs what is due, not
// what exists: the due members are judged per account, by Redis time, in sweep.lua — gone ones leave
// the index, live ones (renewed since) are re-filed at their expiry, expired ones are voided.
// One replica of the fleet runs it at a time (startHoldSweeper, behind a RedisLock).

import type { Redis } from '../redis/client.ts';
import { accountKeys, dueMember, globalKeys } from '../redis/keyspace.ts';
import { RedisLock } from '../redis/lock.ts';
import { type RefiledHold, resyncHoldIndexes } from './hold-index-resync.ts';
import { scripts } from './scripts.ts';

export interface VoidedHold {
  accountId: string;
  holdId: string;
  amount: number;
  reason: 'hold_expired' | 'lease_expired';
}

/**
 * One pass over what is due now in every expiry index; returns the holds it voided. An index that
 * cannot be read or written (its primary failing over) does not stop the others: the pass goes on
 * and then throws, naming what failed, with what it voided on `voided` (so nothing voided goes
 * unreported).
 */
export async function sweepDueHolds(redis: Redis, opts: { batch?: number } = {}): Promise<VoidedHold[]> {
  const batch = opts.batch ?? 500;
  const [sec, usec] = await redis.time();
  const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
  const results = await Promise.allSettled(
    globalKeys.holdsDueAll().map((k) => sweepIndex(redis, k, now, batch)),
  );
  const voided = results.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
  if (failed.length > 0) throw new SweepError(failed, voided);
  return voided;
}

/** Some expiry indexes could not be swept; `voided` holds what the others voided. */
export class SweepError extends AggregateError {
  constructor(
    errors: unknown[],
    readonly voided: VoidedHold[],
  ) {
    super(errors, `${errors.length} hold expiry index(es) could not be swept: ${String(errors[0])}`);
  }
}

/** What is due in one index, in batches: each account's members judged by its own script. */
async function sweepIndex(redis: Redis, index: string, now: number, batch: number): Promise<VoidedHold[]> {
  const voided: VoidedHold[] = [];
  for (;;) {
    const due = await redis.zrangebyscore(index, '-inf', now, 'LIMIT', 0, batch);
    const byAccount = new Map<string, string[]>();
    for (const member of due) {
      const space = member.indexOf(' ');
      const accountId = member.slice(0, space);
      const ids = byAccount.get(accountId);
      if (ids) ids.push(member.slice(space + 1));
      else byAccount.set(accountId, [member.slice(space + 1)]);
    }
    const drop: string[] = [];
    const refile: (string | number)[] = [];
    for (const [accountId, ids] of byAccount) {
      const k = accountKeys(accountId);
      const r = (await scripts.sweep.run(
        redis,
        [k.account, k.holds, k.holdExpiry, k.usage, k.keySpend],
        ids,
      )) as number[];
      ids.forEach((holdId, i) => {
        const status = r[2 * i];
        const value = r[2 * i + 1]!;
        const member = dueMember(accountId, holdId);
        if (status === 2) {
          refile.push(value, member);
          return;
        }
        drop.push(member);
        if (status === 1 || status === 3) {
          const reason = status === 3 ? 'lease_expired' : 'hold_expired';
          voided.push({ accountId, holdId, amount: value, reason });
        }
      });
    }
    // A member re-filed here may have been dropped meanwhile by its settle: XX keeps it dropped.
    if (refile.length > 0) await redis.zadd(index, 'XX', ...refile);
    if (drop.length > 0) await redis.zrem(index, ...drop);
    if (due.length < batch) return voided;
  }
}

export interface HoldSweeperOptions {
  intervalMs: number;
  /** The leader lock's ttl: another replica takes over this long after the sweeping one died. */
  lockTtlMs: number;
  /**
   * How often the leader also files again holds its expiry index lost (./hold-index-resync.ts),
   * and once when it takes the lead; 0 or unset: never.
   */
  resyncMs?: number;
  onVoided?: (voided: VoidedHold[]) => void;
  onRefiled?: (refiled: RefiledHold[]) => void;
  onError?: (err: unknown) => void;
}

/**
 * Runs on every proxy replica; only the one holding the sweeper lock sweeps. Returns a stop
 * function that gives the lock up, so a replica shutting down hands over at once.
 */
export function startHoldSweeper(redis: Redis, opts: HoldSweeperOptions): () => Promise<void> {
  const lock = new RedisLock(redis, globalKeys.sweeperLock, opts.lockTtlMs);
  let running = false;
  /** When this replica last resynced as the leader; null while it does not lead. */
  let resyncedAt: number | null = null;
  let resyncing = false;
  // Runs beside the ticks, not in them: a pass over many accounts must not hold up the sweeping or
  // the lock's renewal. A resync that fails (an index's primary failing over) is said, no more.
  const resyncWhenDue = async () => {
    const resyncMs = opts.resyncMs ?? 0;
    if (resyncMs <= 0 || resyncing) return;
    if (resyncedAt !== null && Date.now() - resyncedAt < resyncMs) return;
    resyncedAt = Date.now();
    resyncing = true;
    try {
      const refiled = await resyncHoldIndexes(redis);
      if (refiled.length > 0) opts.onRefiled?.(refiled);
    } catch (err) {
      opts.onError?.(err);
    } finally {
      resyncing = false;
    }
  };
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      if (!(await lock.acquireOrRenew())) {
        resyncedAt = null;
        return;
      }
      void resyncWhenDue();
      const voided = await sweepDueHolds(redis);
      if (voided.length > 0) opts.onVoided?.(voided);
    } catch (err) {
      if (err instanceof SweepError && err.voided.length > 0) opts.onVoided?.(err.voided);
      opts.onError?.(err);
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void tick(), opts.intervalMs);
  timer.unref();
  void tick();
  return async () => {
    clearInterval(timer);
    await lock.release().catch(() => {});
  };
}
