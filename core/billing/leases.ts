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
  /** The request's hold id (its audit entry's `settle:<holdId>`). */
  holdId: string;
  cost: number;
  usage: UsageRecord;
}

export interface LeaseSettleResult {
  /** What the lease holds after the batch. */
  leaseHeld: number;
  balance: number;
  /** The batch id was settled before: nothing was charged now, `charged` is the first answer. */
  duplicate: boolean;
  /** Per record, in order: what was charged. */
  charged: number[];
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

  /**
   * Settles requests carved from the lease: each charges min(cost, what the lease still holds).
   * Exactly once per `batchId`: a batch sent again with the same id (its reply was lost) charges
   * nothing and answers with the first charges. The caller puts each record in one batch only and
   * never reuses a batch id under one lease id.
   */
  async settleBatch(a: {
    accountId: string;
    leaseId: string;
    batchId: string;
    ttlMs: number;
    records: readonly LeaseSettleRecord[];
  }): Promise<LeaseSettleResult> {
    const k = accountKeys(a.accountId);
    const now = this.now();
    const hour = String(now - (now % HOUR_MS));
    const keys = [
      k.account,
      k.holds,
      k.holdExpiry,
      k.usage,
      k.rollup(hour),
      k.rollupHours,
      k.done(`settle-batch:${a.leaseId}:${a.batchId}`),
    ];
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
      args.push(rec.holdId, rec.cost, ...usageArgs(rec.usage));
    }
    const r = (await scripts.settleBatch.run(this.redis, keys, args)) as number[];
    return { leaseHeld: r[0]!, balance: r[1]!, duplicate: r[2] === 1, charged: r.slice(3) };
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
