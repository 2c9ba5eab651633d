// Credit leases: one hold per (proxy replica, account) that the replica carves request holds from
// in memory, settled in batches (DESIGN "Money", "Latency"). A lease is an ordinary hold, so the
// sweeper frees a crashed replica's lease once its ttl passes, and `balance ≥ held ≥ 0` holds under
// any mix of leases and direct reserves. Each operation is one Lua script over the account's tag.
import type { Redis } from 'ioredis';
import { accountKeys } from '../keyspace.ts';
import { nano, type UsageRecord, usageArgs } from './metering.ts';
import { scripts } from './scripts.ts';

const HOUR_MS = 3_600_000;
const SWEEP_LIMIT = 16;

export interface LeaseSettleRecord {
  /** The request's hold id: the exactly-once key, shared with `Metering.settle`. */
  holdId: string;
  cost: number;
  usage: UsageRecord;
}

export interface LeaseSettleResult {
  /** What the lease holds after the batch. */
  leaseHeld: number;
  balance: number;
  /** Per record, in order: what was charged (the first answer on a duplicate). */
  results: { charged: number; duplicate: boolean }[];
}

export class LeaseMetering {
  private readonly now: () => number;
  private readonly settleDoneTtlMs: number;

  constructor(
    private readonly redis: Redis,
    opts: { now?: () => number; settleDoneTtlMs?: number } = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.settleDoneTtlMs = opts.settleDoneTtlMs ?? 24 * HOUR_MS;
  }

  /**
   * Grows the lease by up to `add` (not past the available balance nor past 1/`den` of what the
   * account has outside other holds; growth below `min` is skipped) and refreshes its ttl.
   */
  async extendLease(a: {
    accountId: string;
    leaseId: string;
    add: number;
    min?: number;
    den: number;
    ttlMs: number;
  }): Promise<{ leaseHeld: number; grown: number; available: number }> {
    nano('add', a.add);
    nano('min', a.min ?? 0);
    if (!Number.isSafeInteger(a.den) || a.den < 1 || a.den > 1024)
      throw new RangeError('den must be 1..1024');
    if (!Number.isSafeInteger(a.ttlMs) || a.ttlMs <= 0)
      throw new RangeError('ttlMs must be a positive integer');
    const k = accountKeys(a.accountId);
    const now = this.now();
    const r = (await scripts.extendLease.run(
      this.redis,
      [k.account, k.holds, k.holdExpiry],
      [a.leaseId, a.add, a.den, a.min ?? 0, now + a.ttlMs, now, SWEEP_LIMIT],
    )) as number[];
    return { leaseHeld: r[0]!, grown: r[1]!, available: r[2]! };
  }

  /** Settles requests carved from the lease: each charges min(cost, what the lease still holds). */
  async settleBatch(a: {
    accountId: string;
    leaseId: string;
    ttlMs: number;
    records: readonly LeaseSettleRecord[];
  }): Promise<LeaseSettleResult> {
    const k = accountKeys(a.accountId);
    const now = this.now();
    const hour = String(now - (now % HOUR_MS));
    const keys = [k.account, k.holds, k.holdExpiry, k.usage, k.rollup(hour), k.rollupHours];
    const args: (string | number)[] = [
      a.leaseId,
      now,
      hour,
      this.settleDoneTtlMs,
      now + a.ttlMs,
      a.records.length,
    ];
    for (const rec of a.records) {
      nano('cost', rec.cost);
      keys.push(k.done(`settle:${rec.holdId}`));
      args.push(rec.holdId, rec.cost, ...usageArgs(rec.usage));
    }
    const r = (await scripts.settleBatch.run(this.redis, keys, args)) as number[];
    const results: LeaseSettleResult['results'] = [];
    for (let i = 2; i < r.length; i += 2) results.push({ charged: r[i]!, duplicate: r[i + 1] === 1 });
    return { leaseHeld: r[0]!, balance: r[1]!, results };
  }

  /** Gives the lease's money back to the account down to `keep` (default 0: the lease is dropped). */
  async releaseLease(a: {
    accountId: string;
    leaseId: string;
    keep?: number;
  }): Promise<{ released: number; leaseHeld: number }> {
    nano('keep', a.keep ?? 0);
    const k = accountKeys(a.accountId);
    const r = (await scripts.releaseLease.run(
      this.redis,
      [k.account, k.holds, k.holdExpiry],
      [a.leaseId, a.keep ?? 0],
    )) as number[];
    return { released: r[0]!, leaseHeld: r[1]! };
  }
}
