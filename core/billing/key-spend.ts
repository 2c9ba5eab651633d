// Per-key spend, for the keys' spend limits (DESIGN "Money") and their reset windows (issue 34: a
// budget of a day, a week or a month). The metering scripts keep it in the account's keySpend hash
// (core/redis/keyspace.ts) in the same step as the balance: every charge adds to its key's
// `spent:<keyId>:<period>` for each of the three periods it falls in (its UTC month `YYYYMM`, day
// `YYYYMMDD` and ISO week `wYYYYMMDD`, named by its Monday), every refund takes off, and a reserve
// for a key with a limit holds no more than the key may still spend in its window's period. Every
// key's spend is kept, limited or not, so a limit set or a window changed mid-period counts what
// the key already spent in it. This module names the periods and reads the figures back (the
// console's keys table, the ledger check).

import type { Redis } from '../redis/client.ts';
import { accountKeys } from '../redis/keyspace.ts';

/** What a key with a spend limit stands at this month (nano). */
export interface KeySpend {
  /** The key's spend limit (per window). */
  limit: number;
  /** Net charged by the key in the window's current period. */
  spent: number;
  /** Held by the key's calls still running. */
  held: number;
  window: BudgetWindow;
  /** When the window's period ends and the key's spend starts again from 0 (ms, UTC). */
  resetsAt: number;
  /**
   * Whose budget this is: the key's, or the account's across all its keys (then limit, spent and
   * held are the account's). Absent: the key's.
   */
  source?: 'key' | 'account';
}

/** The keySpend name of the account's own spend across its keys (common.lua ACCOUNT_KEY). */
export const ACCOUNT_SPEND_KEY = '*';

/** The period a key's spend limit counts over: UTC calendar day, ISO week (Monday on), month. */
export type BudgetWindow = 'day' | 'week' | 'month';
export const BUDGET_WINDOWS: readonly BudgetWindow[] = ['day', 'week', 'month'];
/** A key without a stored window has the month (every limit set before windows existed). */
export const DEFAULT_BUDGET_WINDOW: BudgetWindow = 'month';

/** The scripts' window codes (common.lua WINDOW_CODE) → windows. */
export const budgetWindowOf = (code: number): BudgetWindow => BUDGET_WINDOWS[code - 1] ?? 'month';

export const isBudgetWindow = (v: unknown): v is BudgetWindow =>
  typeof v === 'string' && (BUDGET_WINDOWS as readonly string[]).includes(v);

const DAY_MS = 86_400_000;
const ymd = (d: Date) =>
  `${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}${String(d.getUTCDate()).padStart(2, '0')}`;
/** Midnight UTC of the Monday of `ms`'s ISO week. */
const mondayOf = (ms: number) => {
  const day = Math.floor(ms / DAY_MS) * DAY_MS;
  return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY_MS;
};

/** The period of `window` that `ms` falls in, as the keySpend field names it. */
export function spendPeriod(window: BudgetWindow, ms: number): string {
  if (window === 'month') return spendMonth(ms);
  if (window === 'day') return ymd(new Date(ms));
  return `w${ymd(new Date(mondayOf(ms)))}`;
}

/**
 * The three periods of `ms` (month, day, week), the scripts' `periods` argument: each charge counts
 * in all three, a reserve reads the one of its key's window. Computed by the report clock, as the
 * month always was, so a key's spend in any period is exactly its usage entries' over it.
 */
export const spendPeriods = (ms: number): string =>
  [spendPeriod('month', ms), spendPeriod('day', ms), spendPeriod('week', ms)].join('|');

/** When the period of `window` holding `ms` ends (UTC midnight of the next day, Monday, 1st). */
export function budgetResetsAt(window: BudgetWindow, ms: number): number {
  if (window === 'day') return (Math.floor(ms / DAY_MS) + 1) * DAY_MS;
  if (window === 'week') return mondayOf(ms) + 7 * DAY_MS;
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/**
 * The UTC calendar month of `ms` as `YYYYMM`: the scripts' month field. Computed here and passed to
 * the scripts with the report clock (the clock of the rollups) so a key's month spend is exactly its
 * rollups' net cost over that month.
 */
export function spendMonth(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The keySpend field of a key's spend in one period (a month, day or week). */
export const spentField = (keyId: string, period: string) => `spent:${keyId}:${period}`;

/** Each key's net spend in the current period of its window at `nowMs` (nano; 0: nothing spent). */
export async function keyWindowSpend(
  redis: Redis,
  accountId: string,
  keys: readonly { id: string; window: BudgetWindow }[],
  nowMs: number = Date.now(),
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (keys.length === 0) return out;
  const values = await redis.hmget(
    accountKeys(accountId).keySpend,
    ...keys.map((k) => spentField(k.id, spendPeriod(k.window, nowMs))),
  );
  keys.forEach((k, i) => {
    out.set(k.id, Number(values[i] ?? 0));
  });
  return out;
}

/** Each key's net spend in the UTC month of `nowMs` (nano; 0 for a key that spent nothing). */
export async function keyMonthSpend(
  redis: Redis,
  accountId: string,
  keyIds: readonly string[],
  nowMs: number = Date.now(),
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (keyIds.length === 0) return out;
  const month = spendMonth(nowMs);
  const values = await redis.hmget(
    accountKeys(accountId).keySpend,
    ...keyIds.map((id) => spentField(id, month)),
  );
  keyIds.forEach((id, i) => {
    out.set(id, Number(values[i] ?? 0));
  });
  return out;
}

/**
 * A budget's standing in a metering script's reply from `i` (limit, spent, held, window code,
 * source: 1 the account's), at report time `now`.
 */
export function keySpendAt(r: readonly number[], i: number, now: number): KeySpend {
  const window = budgetWindowOf(r[i + 3]!);
  return {
    limit: r[i]!,
    spent: r[i + 1]!,
    held: r[i + 2]!,
    window,
    resetsAt: budgetResetsAt(window, now),
    source: r[i + 4] === 1 ? 'account' : 'key',
  };
}
