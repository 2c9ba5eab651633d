// Credit leases: one hold per (proxy replica, account) that the replica carves request holds from
// in memory, settled in batches (DESIGN "Money", "Latency"). A lease is an ordinary hold, renewed by
// its replica while it lives, so the sweeper voids a crashed replica's lease once its ttl (Redis
// time) passes, and `balance ≥ held ≥ 0` holds under any mix of leases and direct reserves. Each
// operation is one Lua script over the account's tag.

import type { Redis } from '../redis/client.ts';
import { accountKeys, dueMember, globalKeys } from '../redis/keyspace.ts';
import { type KeySpend, keySpendAt, spendPeriods } from './key-spend.ts';
import type { Voided } from './metering.ts';
import { nano, ttl, type UsageRecord, usageArgs } from './script-args.ts';
import { scripts } from './scripts.ts';

const HOUR_MS = 3_600_000;
const SWEEP_LIMIT = 16;

export interface LeaseSettleRecord {
  /** The request's hold id (its audit entry's `settle:<holdId>`). */
  holdId: string;
  /** The call's true cost, never capped: what the lease does not cover comes from the spare balance. */
  cost: number;
  /** What the call carved from the lease: the most the lease pays of its cost. */
  carved: number;
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
  /** Per record, in order: cost that could not be collected (0 on a duplicate). */
  short: number[];
}

export class LeaseMetering {
  private readonly now: () => number;
  private readonly settleDoneTtlMs: number;

  constructor(
    private readonly redis: Redis,
    /** `now`: the clock of reports (entry ts, rollup hour); expiry is Redis time (see Metering). */
    opts: { now?: () => number; settleDoneTtlMs?: number } = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.settleDoneTtlMs = opts.settleDoneTtlMs ?? 24 * HOUR_MS;
  }

  /**
   * Grows the lease by up to `add` (not past the available balance nor past 1/`den` of what the
   * account has outside other holds; growth below `min` is skipped) and renews its ttl. With
   * `keyId` (a batch's lease, held for its key): a key with a spend limit, and the account's budget
   * across its keys, bound the growth too and the lease is filed as their hold (extend_lease.lua);
   * `keyLimit` is set when a budget, not the balance, cut it (its `source` says whose).
   */
  async extendLease(a: {
    accountId: string;
    leaseId: string;
    add: number;
    min?: number;
    den: number;
    ttlMs: number;
    keyId?: string;
  }): Promise<{
    leaseHeld: number;
    grown: number;
    available: number;
    voided: Voided;
    keyLimit: KeySpend | null;
  }> {
    nano('add', a.add);
    nano('min', a.min ?? 0);
    if (!Number.isSafeInteger(a.den) || a.den < 1 || a.den > 1024)
      throw new RangeError('den must be 1..1024');
    ttl(a.ttlMs);
    const k = accountKeys(a.accountId);
    // Filed in the sweeper's index first, as Metering.reserve does (a scheduling hint only).
    const indexed = this.redis.zadd(
      globalKeys.holdsDue(a.accountId),
      Date.now() + a.ttlMs,
      dueMember(a.accountId, a.leaseId),
    );
    const keyId = a.keyId ?? '';
    const now = this.now();
    const extended = scripts.extendLease.run(
      this.redis,
      [k.account, k.holds, k.holdExpiry, k.usage, k.keySpend, k.key(keyId)],
      [a.leaseId, a.add, a.den, a.min ?? 0, a.ttlMs, SWEEP_LIMIT, keyId, spendPeriods(now)],
    );
    const [, r] = (await Promise.all([indexed, extended])) as [unknown, number[]];
    return {
      leaseHeld: r[0]!,
      grown: r[1]!,
      available: r[2]!,
      voided: { holds: r[3]!, leases: r[4]! },
      keyLimit: r[5] === 1 ? keySpendAt(r, 6, now) : null,
    };
  }

  /**
   * Settles requests carved from the lease: each is charged its cost, from the lease up to what it
   * carved and the rest from the spare balance (never below what stays held; the rest is `short`).
   * Exactly once per `batchId`: a batch sent again with the same id (its reply was lost) charges
   * nothing and answers with the first charges. The caller puts each record in one batch only and
   * never reuses a batch id under one lease id. `perRecord`: each record is also exactly once by its
   * hold id (settle.lua's done key), whichever batch carries it — for a batch whose line may be
   * missing from the journal that carries its records (a full disk, a replay: settle_batch.lua).
   */
  async settleBatch(a: {
    accountId: string;
    leaseId: string;
    batchId: string;
    ttlMs: number;
    records: readonly LeaseSettleRecord[];
    perRecord?: boolean;
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
      k.keySpend,
    ];
    if (a.perRecord === true) for (const rec of a.records) keys.push(k.done(`settle:${rec.holdId}`));
    ttl(a.ttlMs);
    const args: (string | number)[] = [
      a.leaseId,
      now,
      hour,
      this.settleDoneTtlMs,
      a.ttlMs,
      a.records.length,
      spendPeriods(now),
      a.perRecord === true ? 1 : 0,
    ];
    for (const rec of a.records) {
      nano('cost', rec.cost);
      nano('carved', rec.carved);
      args.push(rec.holdId, rec.cost, rec.carved, ...usageArgs(rec.usage));
    }
    const r = (await scripts.settleBatch.run(this.redis, keys, args)) as number[];
    const charged: number[] = [];
    const short: number[] = [];
    for (let i = 3; i < r.length; i += 2) {
      charged.push(r[i]!);
      short.push(r[i + 1]!);
    }
    return { leaseHeld: r[0]!, balance: r[1]!, duplicate: r[2] === 1, charged, short };
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
      [k.account, k.holds, k.holdExpiry, k.keySpend],
      [a.leaseId, a.keep ?? 0],
    )) as number[];
    if (r[1] === 0)
      this.redis.zrem(globalKeys.holdsDue(a.accountId), dueMember(a.accountId, a.leaseId)).catch(() => {});
    return { released: r[0]!, leaseHeld: r[1]! };
  }
}
