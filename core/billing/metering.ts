// Credit metering: holds, settlements, charges, refunds and top-ups on an account's balance.
// Every operation is one Lua script (./lua) over keys that share the account's hash tag, so it is
// atomic and runs unchanged on Redis Cluster. Amounts are integer nano-units below 2^53.

import { ApiError } from '../errors.ts';
import { MAX_SAFE_NANO } from '../money.ts';
import type { Redis } from '../redis/client.ts';
import { accountKeys, dueMember, globalKeys } from '../redis/keyspace.ts';
import { type KeySpend, keySpendAt, spendPeriods } from './key-spend.ts';
import { type RateRefusal, refusalAt, type WindowsState, windowsAt } from './rate-limits.ts';
import { nano, ttl, type UsageRecord, usageArgs } from './script-args.ts';
import { scripts } from './scripts.ts';

/** Expired holds a script voided on its way (their owners are gone): calls' holds and leases. */
export interface Voided {
  holds: number;
  leases: number;
}

/**
 * `keyLimit` is the key's standing when its monthly spend limit decided the answer: it lowered the
 * hold (ok) or refused it (not ok; otherwise the balance did); null when the limit played no part.
 */
export type ReserveResult =
  | {
      ok: true;
      held: number;
      available: number;
      voided: Voided;
      keyLimit: KeySpend | null;
      /** The key's rate windows after this hold took its share; null for a key without limits. */
      windows: WindowsState | null;
    }
  | {
      ok: false;
      available: number;
      voided: Voided;
      keyLimit: KeySpend | null;
      /** Set when a rate limit of the key refused it (the balance and spend limit would not have). */
      rateLimit: RateRefusal | null;
    };

/** Metering.charge's answer; `keyLimit` as in ReserveResult (set when the key's limit refused it). */
export interface ChargeResult {
  ok: boolean;
  charged: number;
  balance: number;
  duplicate: boolean;
  keyLimit: KeySpend | null;
}

export interface SettleResult {
  charged: number;
  balance: number;
  duplicate: boolean;
  /** Cost that could not be collected (the hold was short or gone and the balance ran out). */
  short: number;
}

export interface MeteringOptions {
  /**
   * The clock of reports: a usage entry's `ts` and its rollup hour. Hold expiry never reads it:
   * the scripts take expiry from Redis TIME, so replicas' clocks cannot decide whether a hold lives.
   * Injected so tests can file usage in chosen hours.
   */
  now?: () => number;
  /** How long a settle is remembered for exactly-once (default 24 h, far above any hold ttl). */
  settleDoneTtlMs?: number;
  /** How long a charge, refund or top-up id is remembered (default 35 days: payment retry windows). */
  ledgerDoneTtlMs?: number;
  /**
   * Runs before a top-up is credited in Redis, with the same id: the durable journal commits it
   * first (core/journal), so a Redis that loses the credit can be given it back. A failure here
   * stops the credit.
   */
  beforeTopUp?: (t: {
    accountId: string;
    topUpId: string;
    amount: number;
    note?: string;
  }) => Promise<unknown>;
}

const HOUR_MS = 3_600_000;
/** Expired holds a reserve voids on its way, so one call stays short. */
const RESERVE_SWEEP_LIMIT = 16;

export class Metering {
  private readonly now: () => number;
  private readonly settleDoneTtlMs: number;
  private readonly ledgerDoneTtlMs: number;
  private readonly beforeTopUp: MeteringOptions['beforeTopUp'];

  constructor(
    private readonly redis: Redis,
    opts: MeteringOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.settleDoneTtlMs = opts.settleDoneTtlMs ?? 24 * HOUR_MS;
    this.ledgerDoneTtlMs = opts.ledgerDoneTtlMs ?? 35 * 24 * HOUR_MS;
    this.beforeTopUp = opts.beforeTopUp;
  }

  /**
   * Holds up to `max` (at least `min`) for `ttlMs` of Redis time; the owner renews it while its call
   * runs. available = balance − active holds; the returned `available` is what is left after it.
   * With `keyId`, a key that has a monthly spend limit is held to it in the same script: the hold is
   * at most what the key may still spend this month (by the report clock), refused below `min`.
   */
  async reserve(a: {
    accountId: string;
    holdId: string;
    min: number;
    max: number;
    ttlMs: number;
    keyId?: string | null;
    /**
     * What the call takes of a rate-limited key's token windows: its input tokens as the hold counts
     * them and its output tokens at the hold's max output (given back at settle, less what it used).
     */
    tokens?: { input: number; output: number };
  }): Promise<ReserveResult> {
    nano('min', a.min);
    nano('max', a.max);
    if (a.max < a.min) throw new RangeError(`max (${a.max}) is below min (${a.min})`);
    ttl(a.ttlMs);
    const k = accountKeys(a.accountId);
    // Filed in the sweeper's index before the hold exists (same connection, so Redis runs it first):
    // a hold the sweeper cannot find is never left behind, whatever happens between the two.
    const member = dueMember(a.accountId, a.holdId);
    const indexed = this.redis.zadd(globalKeys.holdsDue(a.accountId), Date.now() + a.ttlMs, member);
    const keyId = a.keyId ?? '';
    const now = this.now();
    const reserved = scripts.reserve.run(
      this.redis,
      [k.account, k.holds, k.holdExpiry, k.done(`settle:${a.holdId}`), k.usage, k.keySpend, k.key(keyId)],
      [
        a.holdId,
        a.min,
        a.max,
        a.ttlMs,
        RESERVE_SWEEP_LIMIT,
        keyId,
        spendPeriods(now),
        a.tokens?.input ?? 0,
        a.tokens?.output ?? 0,
      ],
    );
    const [, r] = (await Promise.all([indexed, reserved])) as [unknown, number[]];
    if (r[0] === 1)
      return {
        ok: true,
        held: r[1]!,
        available: r[2]!,
        voided: { holds: r[3]!, leases: r[4]! },
        keyLimit: r[5] === 1 ? keySpendAt(r, 6, now) : null,
        windows: windowsAt(r, 11),
      };
    this.unindex(a.accountId, a.holdId);
    return {
      ok: false,
      available: r[1]!,
      voided: { holds: r[2]!, leases: r[3]! },
      keyLimit: r[0] === 2 ? keySpendAt(r, 4, now) : null,
      rateLimit: r[0] === 3 ? refusalAt(r, 4) : null,
    };
  }

  /** Pushes the expiry of the given holds `ttlMs` past now (Redis time); returns those that are gone. */
  async renew(accountId: string, ttlMs: number, holdIds: readonly string[]): Promise<string[]> {
    ttl(ttlMs);
    if (holdIds.length === 0) return [];
    const k = accountKeys(accountId);
    return (await scripts.renew.run(this.redis, [k.holds, k.holdExpiry], [ttlMs, ...holdIds])) as string[];
  }

  /**
   * Charges `cost` against the hold: the hold first, the rest from the spare balance, never below
   * what stays held; a gone hold (voided) is charged from the spare balance alone. The entry keeps
   * the true cost beside the amount charged and the `short` part. Exactly once per hold id.
   */
  async settle(a: {
    accountId: string;
    holdId: string;
    cost: number;
    usage: UsageRecord;
  }): Promise<SettleResult> {
    nano('cost', a.cost);
    const k = accountKeys(a.accountId);
    const { now, hour } = this.clock();
    const r = (await scripts.settle.run(
      this.redis,
      [
        k.account,
        k.holds,
        k.holdExpiry,
        k.done(`settle:${a.holdId}`),
        k.usage,
        k.rollup(hour),
        k.rollupHours,
        k.keySpend,
      ],
      [a.holdId, a.cost, now, hour, this.settleDoneTtlMs, ...usageArgs(a.usage), spendPeriods(now)],
    )) as number[];
    this.unindex(a.accountId, a.holdId);
    return { charged: r[0]!, balance: r[1]!, duplicate: r[2] === 1, short: r[3]! };
  }

  /** Drops a hold without a charge; returns what it held (0 when it was gone). */
  async release(accountId: string, holdId: string): Promise<number> {
    const k = accountKeys(accountId);
    const released = (await scripts.release.run(
      this.redis,
      [k.account, k.holds, k.holdExpiry, k.keySpend],
      [holdId],
    )) as number;
    this.unindex(accountId, holdId);
    return released;
  }

  /**
   * Reserve and settle at once (video at job creation); ok:false when available < cost, or when the
   * usage's key has a monthly spend limit that cannot cover the cost (then `keyLimit` says so).
   */
  async charge(a: {
    accountId: string;
    chargeId: string;
    cost: number;
    usage: UsageRecord;
    /**
     * What the charge buys, recorded in the same script (a video job): a hash of the account's
     * (`key`, with `fields`) listed in the account's sorted set `index` under `id`, scored by the
     * charge's time. Not written when the charge is refused.
     */
    record?: {
      key: string;
      index: string;
      id: string;
      fields: Record<string, string | number>;
      /** A counter key: the record's place is then max(ms × 1000, last + 1), never a tie. */
      sequence?: string;
    };
  }): Promise<ChargeResult> {
    nano('cost', a.cost);
    const k = accountKeys(a.accountId);
    const { now, hour } = this.clock();
    const keys = [
      k.account,
      k.done(`charge:${a.chargeId}`),
      k.usage,
      k.rollup(hour),
      k.rollupHours,
      k.keySpend,
      k.key(a.usage.keyId ?? ''),
    ];
    const args: (string | number)[] = [
      a.chargeId,
      a.cost,
      now,
      hour,
      this.ledgerDoneTtlMs,
      ...usageArgs(a.usage),
      spendPeriods(now),
    ];
    if (a.record) {
      keys.push(a.record.key, a.record.index);
      if (a.record.sequence !== undefined) keys.push(a.record.sequence);
      args.push(a.record.id, ...Object.entries(a.record.fields).flat());
    }
    const r = (await scripts.charge.run(this.redis, keys, args)) as number[];
    return {
      ok: r[0] === 1,
      charged: r[1]!,
      balance: r[2]!,
      duplicate: r[3] === 1,
      keyLimit: r[0] === 2 ? keySpendAt(r, 4, now) : null,
    };
  }

  /**
   * Gives back `amount` of one charge, named by its op id (`charge:<chargeId>` or
   * `settle:<holdId>`); the refunds of a charge together never exceed what it charged.
   */
  async refund(a: {
    accountId: string;
    refundId: string;
    of: string;
    amount: number;
    usage: UsageRecord;
    /**
     * What failed, written in the same script (a video job's hash of the account's, `key`, given
     * `fields`): refunded and failed at once. A record that is gone or already finished (status
     * completed or failed) is left alone and nothing is refunded (`finished`).
     */
    record?: { key: string; fields: Record<string, string | number> };
  }): Promise<{ refunded: number; balance: number; duplicate: boolean; finished: boolean }> {
    nano('amount', a.amount);
    if (!/^(charge|settle):./.test(a.of)) throw new RangeError(`'${a.of}' is not a charge op id`);
    const k = accountKeys(a.accountId);
    const { now, hour } = this.clock();
    const keys = [
      k.account,
      k.done(`refund:${a.refundId}`),
      k.usage,
      k.rollup(hour),
      k.rollupHours,
      k.done(a.of),
      k.refunded(a.of),
      k.keySpend,
    ];
    const args: (string | number)[] = [
      a.refundId,
      a.amount,
      now,
      hour,
      this.ledgerDoneTtlMs,
      ...usageArgs(a.usage),
      a.of,
      spendPeriods(now),
    ];
    if (a.record) {
      keys.push(a.record.key);
      args.push(...Object.entries(a.record.fields).flat());
    }
    const r = (await ledgerLimited(scripts.refund.run(this.redis, keys, args))) as number[];
    return { refunded: r[0]!, balance: r[1]!, duplicate: r[2] === 1, finished: r[2] === 2 };
  }

  async topUp(a: {
    accountId: string;
    topUpId: string;
    amount: number;
    note?: string;
  }): Promise<{ balance: number; duplicate: boolean }> {
    nano('amount', a.amount);
    if (a.amount === 0)
      throw new ApiError('invalid_request', 'a top-up must be positive', { param: 'amount' });
    await this.beforeTopUp?.(a);
    const k = accountKeys(a.accountId);
    const r = (await ledgerLimited(
      scripts.topUp.run(
        this.redis,
        [k.account, k.done(`topup:${a.topUpId}`), k.usage],
        [a.topUpId, a.amount, this.now(), this.ledgerDoneTtlMs, a.note ?? ''],
      ),
    )) as number[];
    return { balance: r[0]!, duplicate: r[1] === 1 };
  }

  async balance(accountId: string): Promise<{ balance: number; held: number; available: number }> {
    const [balance, held] = await this.redis.hmget(accountKeys(accountId).account, 'balance', 'held');
    const b = Number(balance ?? 0);
    const h = Number(held ?? 0);
    return { balance: b, held: h, available: b - h };
  }

  /** Drops a finished hold from the sweeper's index; not awaited (a leftover is dropped by the sweeper). */
  private unindex(accountId: string, holdId: string): void {
    this.redis.zrem(globalKeys.holdsDue(accountId), dueMember(accountId, holdId)).catch(() => {});
  }

  private clock(): { now: number; hour: string } {
    const now = this.now();
    return { now, hour: String(now - (now % HOUR_MS)) };
  }
}

/** The ledger scripts' refusals, as errors a caller can act on. */
const refusals: Record<string, { param: string; message: string }> = {
  MP_BALANCE_LIMIT: {
    param: 'amount',
    message: `the balance would pass the maximum of ${MAX_SAFE_NANO} nano-units; top up a smaller amount`,
  },
  MP_REFUND_UNKNOWN_CHARGE: { param: 'of', message: 'there is no such charge to refund (or it is too old)' },
  MP_REFUND_EXCEEDS_CHARGE: {
    param: 'amount',
    message: 'the refunds of a charge cannot exceed what it charged',
  },
};

async function ledgerLimited(p: Promise<unknown>): Promise<unknown> {
  try {
    return await p;
  } catch (err) {
    const code = err instanceof Error ? /\b(MP_[A-Z_]+)\b/.exec(err.message)?.[1] : undefined;
    const refusal = code === undefined ? undefined : refusals[code];
    if (refusal) throw new ApiError('invalid_request', refusal.message, { param: refusal.param, cause: err });
    throw err;
  }
}
