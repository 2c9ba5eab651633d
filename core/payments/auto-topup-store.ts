// Auto top-up's state (issue 37 item 7), one hash per account beside its balance (same hash tag):
// the owner's settings (threshold, amount, monthly cap), the saved card, the crossing marker, the
// month's count and the last attempt. A crossing is the balance going from at-or-above the
// threshold to below it; `armed` says the next check below the threshold is a new crossing. One
// script reads the balance and disarms the marker in the same step, so however many checkers run
// (every console instance runs one) a crossing is claimed once and gets one attempt id. A failed
// charge consumes its crossing: nothing is retried until the balance has been above the threshold
// again, and after CONSOLE_AUTO_TOPUP_MAX_FAILURES failures in a row auto top-up pauses itself.

import type { Redis } from '../redis/client.ts';
import { accountKeys, globalKeys } from '../redis/keyspace.ts';
import { LuaScript } from '../redis/lua.ts';

export type AttemptStatus = 'charging' | 'awaiting' | 'credited' | 'failed' | 'capped';

export interface AutoTopUpState {
  enabled: boolean;
  /** nano-units of the account currency; null before the owner set one */
  threshold: number | null;
  amount: number | null;
  /** Most auto top-ups per calendar month (UTC). */
  monthlyCap: number | null;
  /** The Stripe customer made for the account (made when a card is first saved). */
  customerId: string | null;
  card: { paymentMethodId: string; brand: string; last4: string } | null;
  /** Failed charges in a row (reset by a credited one or by the owner turning it on again). */
  failures: number;
  /** Why auto top-up stopped itself; null while it runs. */
  paused: string | null;
  /** Auto top-ups started in `month` (YYYY-MM, UTC). */
  month: string | null;
  monthCount: number;
  last: {
    id: string;
    at: string;
    status: AttemptStatus;
    amount: number;
    reason: string | null;
    paymentIntentId: string | null;
  } | null;
}

/**
 * KEYS: auto top-up hash, account hash. ARGV: month (YYYY-MM), now (ISO), attempt id prefix, now (ms).
 * {'off'} | {'above'} | {'waiting'} | {'capped'} | {'claimed', seq, amount, customerId, paymentMethodId}
 */
const claimScript = new LuaScript(
  `
local s = redis.call('HMGET', KEYS[1], 'enabled', 'threshold', 'amount', 'monthlyCap', 'paymentMethodId',
  'armed', 'paused', 'month', 'monthCount', 'customerId')
if s[1] ~= '1' or not s[2] or not s[3] or not s[4] or not s[5] or not s[10] or s[7] then return {'off'} end
local balance = tonumber(redis.call('HGET', KEYS[2], 'balance') or '0')
if balance >= tonumber(s[2]) then
  if s[6] ~= '1' then redis.call('HSET', KEYS[1], 'armed', '1') end
  return {'above'}
end
if s[6] ~= '1' then return {'waiting'} end
redis.call('HSET', KEYS[1], 'armed', '0')
local count = 0
if s[8] == ARGV[1] then count = tonumber(s[9] or '0') end
if count >= tonumber(s[4]) then
  redis.call('HSET', KEYS[1], 'lastId', '', 'lastAt', ARGV[2], 'lastStatus', 'capped', 'lastAmount', s[3],
    'lastReason', 'the monthly cap of ' .. s[4] .. ' auto top-ups was reached', 'lastPaymentIntent', '')
  return {'capped'}
end
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('HSET', KEYS[1], 'month', ARGV[1], 'monthCount', count + 1, 'lastId', ARGV[3] .. seq,
  'lastAt', ARGV[2], 'lastStatus', 'charging', 'lastAmount', s[3], 'lastReason', '', 'lastPaymentIntent', '',
  'lastAtMs', ARGV[4])
return {'claimed', ARGV[3] .. seq, s[3], s[10], s[5]}
`,
  'autotopup_claim',
);

/**
 * KEYS: auto top-up hash. ARGV: attempt id, status, reason, payment intent id, max failures.
 * Records an attempt's outcome if it is still the last attempt and not already final (but for a
 * credit after a failure); a failure counts once and pauses auto top-up at the limit. Returns 1
 * when recorded.
 */
const finishScript = new LuaScript(
  `
local s = redis.call('HMGET', KEYS[1], 'lastId', 'lastStatus', 'failures')
if s[1] ~= ARGV[1] then return 0 end
-- A late success after a failure (the charge went through while Stripe looked unreachable) is
-- still shown as credited: the money came.
local open = s[2] == 'charging' or s[2] == 'awaiting' or (ARGV[2] == 'credited' and s[2] == 'failed')
if not open then return 0 end
redis.call('HSET', KEYS[1], 'lastStatus', ARGV[2], 'lastReason', ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'lastPaymentIntent', ARGV[4]) end
if ARGV[2] == 'credited' then redis.call('HSET', KEYS[1], 'failures', 0) end
if ARGV[2] == 'failed' then
  local n = tonumber(s[3] or '0') + 1
  redis.call('HSET', KEYS[1], 'failures', n)
  if n >= tonumber(ARGV[5]) then
    redis.call('HSET', KEYS[1], 'paused', 'paused after ' .. n .. ' failed charges in a row')
  end
end
return 1
`,
  'autotopup_finish',
);

/**
 * KEYS: auto top-up hash. ARGV: now (ms), stale (ms). An attempt still `charging` long after it
 * was claimed (its checker died between the claim and Stripe's answer) is taken again, once per
 * `stale`: {id, amount, customerId, paymentMethodId}; else {}. Only while auto top-up is on.
 */
const redriveScript = new LuaScript(
  `
local s = redis.call('HMGET', KEYS[1], 'lastId', 'lastStatus', 'lastAtMs', 'lastAmount', 'customerId',
  'paymentMethodId', 'enabled', 'paused')
if s[2] ~= 'charging' or not s[1] or s[1] == '' or s[7] ~= '1' or s[8] or not s[5] or not s[6] then return {} end
if tonumber(s[3] or '0') > tonumber(ARGV[1]) - tonumber(ARGV[2]) then return {} end
redis.call('HSET', KEYS[1], 'lastAtMs', ARGV[1])
return {s[1], s[4], s[5], s[6]}
`,
  'autotopup_redrive',
);

/** The attempt ids an account's crossings get: `topup_auto_<account>_<n>`, also the top-up request id. */
export const attemptPrefix = (accountId: string) => `topup_auto_${accountId}_`;

/** One crossing's charge: what to charge, to which card, under which id. */
export interface Attempt {
  id: string;
  /** nano-units of the account currency */
  amount: number;
  customerId: string;
  paymentMethodId: string;
}

export class AutoTopUpStore {
  constructor(private readonly redis: Redis) {}

  async get(accountId: string): Promise<AutoTopUpState> {
    const h = await this.redis.hgetall(accountKeys(accountId).autoTopUp);
    const num = (v: string | undefined) => (v === undefined || v === '' ? null : Number(v));
    return {
      enabled: h.enabled === '1',
      threshold: num(h.threshold),
      amount: num(h.amount),
      monthlyCap: num(h.monthlyCap),
      customerId: h.customerId || null,
      card: h.paymentMethodId
        ? { paymentMethodId: h.paymentMethodId, brand: h.cardBrand ?? '', last4: h.cardLast4 ?? '' }
        : null,
      failures: Number(h.failures ?? 0),
      paused: h.paused || null,
      month: h.month || null,
      monthCount: Number(h.monthCount ?? 0),
      last: h.lastStatus
        ? {
            id: h.lastId ?? '',
            at: h.lastAt ?? '',
            status: h.lastStatus as AttemptStatus,
            amount: Number(h.lastAmount ?? 0),
            reason: h.lastReason || null,
            paymentIntentId: h.lastPaymentIntent || null,
          }
        : null,
    };
  }

  /**
   * The owner's settings. Saving arms the marker (the owner asked for it: a balance already below
   * the threshold is topped up once), and turning it on clears a pause and the failure count.
   */
  async save(
    accountId: string,
    s: { enabled: boolean; threshold: number; amount: number; monthlyCap: number },
  ): Promise<void> {
    const k = accountKeys(accountId).autoTopUp;
    const fields: Record<string, string | number> = {
      enabled: s.enabled ? '1' : '0',
      threshold: s.threshold,
      amount: s.amount,
      monthlyCap: s.monthlyCap,
      armed: '1',
    };
    // The index first when turning on (a checker finds every account that is on), last when off.
    if (s.enabled) await this.redis.sadd(globalKeys.autoTopUpAccounts, accountId);
    const m = this.redis.multi().hset(k, fields);
    if (s.enabled) m.hdel(k, 'paused').hset(k, 'failures', 0);
    await m.exec();
    if (!s.enabled) await this.redis.srem(globalKeys.autoTopUpAccounts, accountId);
  }

  async setCustomer(accountId: string, customerId: string): Promise<void> {
    await this.redis.hset(accountKeys(accountId).autoTopUp, 'customerId', customerId);
  }

  /** A card saved at Stripe for the account's customer: the one auto top-up charges from now on. */
  async setCard(accountId: string, card: { paymentMethodId: string; brand: string; last4: string }) {
    const k = accountKeys(accountId).autoTopUp;
    await this.redis
      .multi()
      .hset(k, { paymentMethodId: card.paymentMethodId, cardBrand: card.brand, cardLast4: card.last4 })
      .hdel(k, 'paused')
      .hset(k, 'failures', 0)
      .exec();
  }

  /** Accounts that have auto top-up on (a few may have turned it off since: claim says `off`). */
  accounts(): Promise<string[]> {
    return this.redis.smembers(globalKeys.autoTopUpAccounts);
  }

  async claim(
    accountId: string,
    now: Date,
  ): Promise<
    { claimed: false; why: 'off' | 'above' | 'waiting' | 'capped' } | ({ claimed: true } & Attempt)
  > {
    const k = accountKeys(accountId);
    const r = (await claimScript.run(
      this.redis,
      [k.autoTopUp, k.account],
      [now.toISOString().slice(0, 7), now.toISOString(), attemptPrefix(accountId), now.getTime()],
    )) as string[];
    if (r[0] !== 'claimed') return { claimed: false, why: r[0] as 'off' | 'above' | 'waiting' | 'capped' };
    return {
      claimed: true,
      id: r[1]!,
      amount: Number(r[2]),
      customerId: r[3]!,
      paymentMethodId: r[4]!,
    };
  }

  /** A `charging` attempt older than `staleMs`, taken for charging again (see redriveScript). */
  async redrive(accountId: string, now: Date, staleMs: number): Promise<Attempt | null> {
    const r = (await redriveScript.run(
      this.redis,
      [accountKeys(accountId).autoTopUp],
      [now.getTime(), staleMs],
    )) as string[];
    return r.length === 0
      ? null
      : { id: r[0]!, amount: Number(r[1]), customerId: r[2]!, paymentMethodId: r[3]! };
  }

  /** Records an attempt's outcome (once; a late word on an older attempt changes nothing). */
  async finish(
    accountId: string,
    id: string,
    o: { status: 'awaiting' | 'credited' | 'failed'; reason?: string; paymentIntentId?: string },
    maxFailures: number,
  ): Promise<boolean> {
    const r = await finishScript.run(
      this.redis,
      [accountKeys(accountId).autoTopUp],
      [id, o.status, o.reason ?? '', o.paymentIntentId ?? '', maxFailures],
    );
    return r === 1;
  }
}
