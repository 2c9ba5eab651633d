// Accounts: the owner of keys, balance and usage. Console users are members of accounts
// (core/accounts/team.ts); keys belong to the account, not to the member who created them (KEY-7).

import { type BudgetWindow, DEFAULT_BUDGET_WINDOW, isBudgetWindow } from '../billing/key-spend.ts';
import {
  NO_RATE_LIMITS,
  parseRateLimits,
  RATE_LIMIT_FIELDS,
  RATE_LIMIT_NAMES,
  type RateLimits,
  validateRateLimits,
} from '../billing/rate-limits.ts';
import { ApiError, invalidRequest } from '../errors.ts';
import { newId } from '../ids.ts';
import { parseSpendLimit, validateSpendLimit, validateSpendWindow } from '../keys/records.ts';
import { announce } from '../redis/announce.ts';
import { perItem, type Redis } from '../redis/client.ts';
import { accountKeys, channels, globalKeys } from '../redis/keyspace.ts';
import { LuaScript } from '../redis/lua.ts';
import { currencyForCountry } from './currency.ts';

export interface Account {
  id: string;
  name: string;
  country: string | null;
  currency: string | null;
  createdAt: string;
  /** The rate limits of every key of the account that sets none of its own (issue 34). */
  rateLimits: RateLimits;
  /**
   * The account's budget across all its keys (nano per window; issue 34), or null. The metering
   * scripts enforce it from the hash's `budget` and `budgetWindow` fields.
   */
  budget: { limit: number; window: BudgetWindow } | null;
  /**
   * Seconds a call its key's calls-at-once limit refuses waits in the proxy for a slot instead of
   * a 429 (issue 48 item 3), or null: refused at once, the default.
   */
  concurrencyQueueSeconds: number | null;
}

/** The longest wait for a slot an account may ask: a short wait, well inside the SDKs' timeouts. */
export const MAX_CONCURRENCY_QUEUE_SECONDS = 60;
const CONCURRENCY_QUEUE_FIELD = 'concQueueS';

function validateConcurrencyQueue(seconds: unknown): number | null {
  if (seconds === null) return null;
  if (
    typeof seconds !== 'number' ||
    !Number.isSafeInteger(seconds) ||
    seconds < 1 ||
    seconds > MAX_CONCURRENCY_QUEUE_SECONDS
  )
    throw invalidRequest(
      `concurrencyQueueSeconds must be null or a whole number of seconds from 1 to ${MAX_CONCURRENCY_QUEUE_SECONDS}`,
      'concurrencyQueueSeconds',
    );
  return seconds;
}

const MAX_ACCOUNT_NAME_LENGTH = 200;

/** Its refusals are said on the console's Profile form as they are, so in words. */
function validateName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '')
    throw invalidRequest('Give the account a name.', 'name');
  if ([...name].length > MAX_ACCOUNT_NAME_LENGTH) {
    throw invalidRequest(`An account name is at most ${MAX_ACCOUNT_NAME_LENGTH} characters.`, 'name');
  }
  return name;
}

/** Country → { country (upper case), currency }; null clears both (the account then cannot be billed). */
/**
 * Balances are integers in the account currency, so switching currency with money on the account
 * would silently reinterpret it (100 USD becoming 100 JPY). Atomic with the balance scripts.
 * Returns the current currency when the change is refused, else nil.
 */
const SET_COUNTRY = new LuaScript(
  `
local cur = redis.call('HGET', KEYS[1], 'currency')
if cur and cur ~= ARGV[2] then
  local balance = tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')
  local held = tonumber(redis.call('HGET', KEYS[1], 'held') or '0')
  if balance ~= 0 or held ~= 0 then return cur end
end
if ARGV[1] == '' then redis.call('HDEL', KEYS[1], 'country', 'currency')
else redis.call('HSET', KEYS[1], 'country', ARGV[1], 'currency', ARGV[2]) end
return false
`,
  'set_country',
);

function resolveCountry(country: string | null | undefined): { country: string; currency: string } | null {
  if (country === null || country === undefined) return null;
  const currency =
    typeof country === 'string' && /^[A-Za-z]{2}$/.test(country) ? currencyForCountry(country) : null;
  if (currency === null) {
    throw invalidRequest(
      `country '${String(country)}' is not supported; use an ISO 3166-1 alpha-2 code of a supported country`,
      'country',
    );
  }
  return { country: country.toUpperCase(), currency };
}

function parseAccount(h: Record<string, string>): Account | null {
  // The hash may also carry billing fields written by core/billing; `id` marks a created account.
  if (!h.id || !h.createdAt) return null;
  return {
    id: h.id,
    name: h.name ?? '',
    country: h.country || null,
    currency: h.currency || null,
    createdAt: h.createdAt,
    rateLimits: parseRateLimits(RATE_LIMIT_NAMES.map((n) => h[RATE_LIMIT_FIELDS[n]])),
    budget: parseBudget(h.budget, h.budgetWindow),
    concurrencyQueueSeconds:
      Number(h[CONCURRENCY_QUEUE_FIELD]) > 0 ? Number(h[CONCURRENCY_QUEUE_FIELD]) : null,
  };
}

function parseBudget(limit: string | undefined, window: string | undefined): Account['budget'] {
  const l = parseSpendLimit(limit);
  if (l === null) return null;
  return { limit: l, window: isBudgetWindow(window) ? window : DEFAULT_BUDGET_WINDOW };
}

export class Accounts {
  constructor(private readonly redis: Redis) {}

  async create(input: { name: string; country?: string | null; id?: string }): Promise<Account> {
    const name = validateName(input.name);
    const place = resolveCountry(input.country);
    const id = input.id ?? newId('acct');
    if (typeof id !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(id)) {
      throw invalidRequest('id must be 1 to 64 letters, digits, "_" or "-"', 'id');
    }
    const key = accountKeys(id).account;
    // HSETNX on `id` is the creation claim: two creates with one id cannot both succeed, and the
    // balance field billing may already have written is left alone.
    if ((await this.redis.hsetnx(key, 'id', id)) === 0)
      throw invalidRequest(`account '${id}' already exists`, 'id');
    const account: Account = {
      id,
      name,
      country: place?.country ?? null,
      currency: place?.currency ?? null,
      createdAt: new Date().toISOString(),
      rateLimits: NO_RATE_LIMITS,
      budget: null,
      concurrencyQueueSeconds: null,
    };
    const fields: Record<string, string> = { name, createdAt: account.createdAt };
    if (place) Object.assign(fields, place);
    await this.redis.hset(key, fields);
    await this.redis.sadd(globalKeys.accounts, id);
    return account;
  }

  async get(id: string): Promise<Account | null> {
    return parseAccount(await this.redis.hgetall(accountKeys(id).account));
  }

  /**
   * Sets or clears the country, which decides the billing currency. Note: the balance is stored in
   * the account currency, so callers should not switch currency on an account that holds credit.
   */
  async setCountry(id: string, country: string | null): Promise<Account> {
    await this.mustExist(id);
    const place = resolveCountry(country);
    const blocking = (await SET_COUNTRY.run(
      this.redis,
      [accountKeys(id).account],
      [place?.country ?? '', place?.currency ?? ''],
    )) as string | null;
    if (blocking) {
      throw invalidRequest(
        `the account holds credit in ${blocking}; its currency cannot change until the balance and holds are zero`,
        'country',
      );
    }
    await this.announceChange(id);
    return (await this.get(id))!;
  }

  async rename(id: string, name: string): Promise<Account> {
    await this.mustExist(id);
    await this.redis.hset(accountKeys(id).account, 'name', validateName(name));
    return (await this.get(id))!;
  }

  async list(): Promise<Account[]> {
    const ids = await this.redis.smembers(globalKeys.accounts);
    const accounts: Account[] = [];
    for (const [err, value] of await perItem(this.redis, ids, (p, id) =>
      p.hgetall(accountKeys(id).account),
    )) {
      if (err) throw err;
      const account = parseAccount(value as Record<string, string>);
      if (account) accounts.push(account);
    }
    return accounts.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  /**
   * Sets or unsets (null) some of the account-wide default rate limits (issue 34): every key that
   * sets no such limit of its own is held to it. Proxies drop their cached views of the account.
   */
  async setRateLimits(id: string, limits: Partial<RateLimits>): Promise<Account> {
    await this.mustExist(id);
    const set = validateRateLimits(limits);
    const key = accountKeys(id).account;
    const p = this.redis.multi();
    for (const [name, v] of Object.entries(set)) {
      const field = RATE_LIMIT_FIELDS[name as keyof RateLimits];
      if (v === null) p.hdel(key, field);
      else p.hset(key, field, String(v));
    }
    await p.exec();
    await this.announceChange(id);
    return (await this.get(id))!;
  }

  /**
   * Opts the account in (seconds) or out (null) of waiting for a slot (issue 48 item 3): a call its
   * key's calls-at-once limit refuses then waits in the proxy up to that long for one of the key's
   * running calls to end, instead of being answered 429 at once. Proxies drop their cached views.
   */
  async setConcurrencyQueue(id: string, seconds: number | null): Promise<Account> {
    await this.mustExist(id);
    const s = validateConcurrencyQueue(seconds);
    const key = accountKeys(id).account;
    if (s === null) await this.redis.hdel(key, CONCURRENCY_QUEUE_FIELD);
    else await this.redis.hset(key, CONCURRENCY_QUEUE_FIELD, String(s));
    await this.announceChange(id);
    return (await this.get(id))!;
  }

  /**
   * Sets (nano per window) or clears (null) the account's budget across all its keys (issue 34); a
   * window not given stays (month when there was none). Its calls then hold per call (proxies drop
   * their cached views), and a call the budget cannot cover is refused with limit_source `account`.
   */
  async setBudget(id: string, limit: number | null, window?: BudgetWindow): Promise<Account> {
    await this.mustExist(id);
    const l = validateSpendLimit(limit);
    const key = accountKeys(id).account;
    if (l === null) await this.redis.hdel(key, 'budget', 'budgetWindow');
    else {
      const fields: Record<string, string> = { budget: String(l) };
      if (window !== undefined) fields.budgetWindow = validateSpendWindow(window);
      await this.redis.hset(key, fields);
    }
    await this.announceChange(id);
    return (await this.get(id))!;
  }

  async grantModel(accountId: string, modelId: string): Promise<void> {
    await this.mustExist(accountId);
    await this.redis.sadd(accountKeys(accountId).grants, modelId.toLowerCase());
    await this.announceChange(accountId);
  }

  async revokeModel(accountId: string, modelId: string): Promise<void> {
    await this.redis.srem(accountKeys(accountId).grants, modelId.toLowerCase());
    await this.announceChange(accountId);
  }

  /** Proxies cache an account's currency and grants with its keys; this tells them to reload. */
  private async announceChange(accountId: string): Promise<void> {
    await announce(this.redis, channels.accountChanged, accountId);
  }

  async grants(accountId: string): Promise<Set<string>> {
    return new Set(await this.redis.smembers(accountKeys(accountId).grants));
  }

  private async mustExist(id: string): Promise<void> {
    if ((await this.redis.hexists(accountKeys(id).account, 'id')) === 0) {
      throw new ApiError('not_found', `No account '${id}'.`);
    }
  }
}
