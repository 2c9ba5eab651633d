// Credit metering: holds, settlements, charges, refunds and top-ups on an account's balance.
// Every operation is one Lua script (./lua) over keys that share the account's hash tag, so it is
// atomic and runs unchanged on Redis Cluster. Amounts are integer nano-units below 2^53.
import type { Redis } from 'ioredis';
import { ApiError } from '../errors.ts';
import { accountKeys } from '../keyspace.ts';
import { MAX_SAFE_NANO } from '../money.ts';
import { scripts } from './scripts.ts';

export interface UsageRecord {
  keyId: string | null;
  model: string;
  kind: 'chat' | 'embedding' | 'image' | 'video';
  inputTokens?: number;
  cachedTokens?: number;
  outputTokens?: number;
  images?: number;
  videoSeconds?: number;
  requestId?: string;
}

export type ReserveResult = { ok: true; held: number; available: number } | { ok: false; available: number };

export interface MeteringOptions {
  /**
   * The clock for hold expiry and rollup hours. Injected rather than read with Redis TIME so tests
   * can move time forward (expire a hold, cross an hour) without sleeping; proxies' clocks differ
   * by milliseconds, which is nothing against hold ttls of minutes.
   */
  now?: () => number;
  /** How long a settle is remembered for exactly-once (default 24 h, far above any hold ttl). */
  settleDoneTtlMs?: number;
  /** How long a charge, refund or top-up id is remembered (default 35 days: payment retry windows). */
  ledgerDoneTtlMs?: number;
}

const HOUR_MS = 3_600_000;
/** Expired holds a reserve frees on its way, so one call stays short. */
const RESERVE_SWEEP_LIMIT = 16;
const SWEEP_BATCH = 500;

export class Metering {
  private readonly now: () => number;
  private readonly settleDoneTtlMs: number;
  private readonly ledgerDoneTtlMs: number;

  constructor(
    private readonly redis: Redis,
    opts: MeteringOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.settleDoneTtlMs = opts.settleDoneTtlMs ?? 24 * HOUR_MS;
    this.ledgerDoneTtlMs = opts.ledgerDoneTtlMs ?? 35 * 24 * HOUR_MS;
  }

  /** available = balance − active holds; returned `available` is what is left after this hold. */
  async reserve(a: {
    accountId: string;
    holdId: string;
    min: number;
    max: number;
    ttlMs: number;
  }): Promise<ReserveResult> {
    nano('min', a.min);
    nano('max', a.max);
    if (a.max < a.min) throw new RangeError(`max (${a.max}) is below min (${a.min})`);
    if (!Number.isSafeInteger(a.ttlMs) || a.ttlMs <= 0)
      throw new RangeError('ttlMs must be a positive integer');
    const k = accountKeys(a.accountId);
    const now = this.now();
    const r = (await scripts.reserve.run(
      this.redis,
      [k.account, k.holds, k.holdExpiry, k.done(`settle:${a.holdId}`)],
      [a.holdId, a.min, a.max, now + a.ttlMs, now, RESERVE_SWEEP_LIMIT],
    )) as number[];
    return r[0] === 1 ? { ok: true, held: r[1]!, available: r[2]! } : { ok: false, available: r[1]! };
  }

  /** Charges min(cost, held) and records the usage; a repeated settle returns the first result. */
  async settle(a: {
    accountId: string;
    holdId: string;
    cost: number;
    usage: UsageRecord;
  }): Promise<{ charged: number; balance: number; duplicate: boolean }> {
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
      ],
      [a.holdId, a.cost, now, hour, this.settleDoneTtlMs, ...usageArgs(a.usage)],
    )) as number[];
    return { charged: r[0]!, balance: r[1]!, duplicate: r[2] === 1 };
  }

  async release(accountId: string, holdId: string): Promise<void> {
    const k = accountKeys(accountId);
    await scripts.release.run(this.redis, [k.account, k.holds, k.holdExpiry], [holdId]);
  }

  /** Reserve and settle at once (video at job creation); ok:false when available < cost. */
  async charge(a: {
    accountId: string;
    chargeId: string;
    cost: number;
    usage: UsageRecord;
  }): Promise<{ ok: boolean; charged: number; balance: number; duplicate: boolean }> {
    nano('cost', a.cost);
    const k = accountKeys(a.accountId);
    const { now, hour } = this.clock();
    const r = (await scripts.charge.run(
      this.redis,
      [k.account, k.done(`charge:${a.chargeId}`), k.usage, k.rollup(hour), k.rollupHours],
      [a.chargeId, a.cost, now, hour, this.ledgerDoneTtlMs, ...usageArgs(a.usage)],
    )) as number[];
    return { ok: r[0] === 1, charged: r[1]!, balance: r[2]!, duplicate: r[3] === 1 };
  }

  async refund(a: {
    accountId: string;
    refundId: string;
    amount: number;
    usage: UsageRecord;
  }): Promise<{ refunded: number; balance: number; duplicate: boolean }> {
    nano('amount', a.amount);
    const k = accountKeys(a.accountId);
    const { now, hour } = this.clock();
    const r = (await balanceLimited(
      scripts.refund.run(
        this.redis,
        [k.account, k.done(`refund:${a.refundId}`), k.usage, k.rollup(hour), k.rollupHours],
        [a.refundId, a.amount, now, hour, this.ledgerDoneTtlMs, ...usageArgs(a.usage)],
      ),
    )) as number[];
    return { refunded: r[0]!, balance: r[1]!, duplicate: r[2] === 1 };
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
    const k = accountKeys(a.accountId);
    const r = (await balanceLimited(
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

  /** Releases every hold whose expiry has passed; returns how many. */
  async sweepExpiredHolds(accountId: string): Promise<number> {
    const k = accountKeys(accountId);
    const now = this.now();
    let total = 0;
    for (;;) {
      const n = (await scripts.sweep.run(
        this.redis,
        [k.account, k.holds, k.holdExpiry],
        [now, SWEEP_BATCH],
      )) as number;
      total += n;
      if (n < SWEEP_BATCH) return total;
    }
  }

  private clock(): { now: number; hour: string } {
    const now = this.now();
    return { now, hour: String(now - (now % HOUR_MS)) };
  }
}

export function nano(name: string, v: number): void {
  if (!Number.isSafeInteger(v) || v < 0 || v > MAX_SAFE_NANO) {
    throw new RangeError(`${name} must be a non-negative integer of nano-units below 2^53, got ${v}`);
  }
}

function count(name: string, v: number | undefined): string {
  if (v === undefined) return '';
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`usage.${name} must be a non-negative integer`);
  return String(v);
}

/** The usage block in the order common.lua's read_usage expects. */
export function usageArgs(u: UsageRecord): string[] {
  if (u.model.length === 0) throw new RangeError('usage.model is required');
  let vsec = '';
  let vms = '';
  if (u.videoSeconds !== undefined) {
    if (!Number.isFinite(u.videoSeconds) || u.videoSeconds < 0) {
      throw new RangeError('usage.videoSeconds must be a non-negative number');
    }
    // Rollups count integers, so video time is summed in milliseconds.
    vsec = String(u.videoSeconds);
    vms = String(Math.round(u.videoSeconds * 1000));
  }
  return [
    u.keyId ?? '',
    u.model,
    u.kind,
    count('inputTokens', u.inputTokens),
    count('cachedTokens', u.cachedTokens),
    count('outputTokens', u.outputTokens),
    count('images', u.images),
    vsec,
    vms,
    u.requestId ?? '',
  ];
}

async function balanceLimited(p: Promise<unknown>): Promise<unknown> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof Error && /\bMP_BALANCE_LIMIT\b/.test(err.message)) {
      throw new ApiError(
        'invalid_request',
        `the balance would pass the maximum of ${MAX_SAFE_NANO} nano-units; top up a smaller amount`,
        { param: 'amount', cause: err },
      );
    }
    throw err;
  }
}
