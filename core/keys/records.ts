// The API key record as stored (one hash per key under the account tag) and the operations that
// need no key-encryption key: reading, listing and revoking. Accounts.removeMember revokes through
// here, so it does not have to hold the KEK.

import {
  BUDGET_WINDOWS,
  type BudgetWindow,
  DEFAULT_BUDGET_WINDOW,
  isBudgetWindow,
} from '../billing/key-spend.ts';
import {
  parseRateLimits,
  RATE_LIMIT_FIELDS,
  RATE_LIMIT_NAMES,
  type RateLimits,
} from '../billing/rate-limits.ts';
import { invalidRequest } from '../errors.ts';
import { MAX_SAFE_NANO } from '../money.ts';
import { announce } from '../redis/announce.ts';
import type { Redis } from '../redis/client.ts';
import { accountKeys, channels, globalKeys } from '../redis/keyspace.ts';
import { deleteKeyScript } from './scripts.ts';

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  name: string;
  createdAt: string;
  createdBy: string | null;
  status: 'active' | 'deleted';
  format: 'current' | 'legacy';
  last4: string;
  rotatedAt: string | null;
  deletedAt: string | null;
  /**
   * The key's monthly spend limit in nano-units of the account currency, or null: what calls made
   * with it may be charged per UTC calendar month, enforced by the metering scripts.
   */
  spendLimit: number | null;
  /**
   * The period the spend limit counts over and resets after (issue 34): a UTC day, an ISO week
   * from Monday 00:00 UTC, or a UTC calendar month (the default, and every limit set before).
   */
  spendWindow: BudgetWindow;
  /** The key's own rate limits (issue 34); an unset one falls back to the account's default. */
  rateLimits: RateLimits;
}

export interface AuthenticatedKey {
  accountId: string;
  keyId: string;
  secretHash: string;
  /** As in ApiKeyRecord: the proxy reserves per call for a key that has one. */
  spendLimit: number | null;
  /** As in ApiKeyRecord (the key's own, not the account's defaults). */
  rateLimits: RateLimits;
}

/** The hash fields of a key's rate limits, in RATE_LIMIT_NAMES order (HMGET them after others). */
export const RATE_LIMIT_HASH_FIELDS = RATE_LIMIT_NAMES.map((n) => RATE_LIMIT_FIELDS[n]);

export const MAX_KEY_NAME_LENGTH = 100;

/**
 * Checks a key name (KEY-2) and returns the form used for uniqueness: NFC + lowercase, so `Prod`
 * and `prod` (or composed/decomposed accents) are one name. Length counts characters, not UTF-16
 * units, so an emoji is one.
 */
export function validateKeyName(name: unknown): { name: string; nameKey: string } {
  // Said as they are on the console's forms, so in words (the param names the field for code).
  if (typeof name !== 'string') throw invalidRequest('The key name must be text.', 'name');
  const length = [...name].length;
  if (length === 0) throw invalidRequest('Give the key a name.', 'name');
  if (length > MAX_KEY_NAME_LENGTH) {
    throw invalidRequest(
      `A key name is at most ${MAX_KEY_NAME_LENGTH} characters (this one has ${length}).`,
      'name',
    );
  }
  if (/\p{Cc}/u.test(name)) throw invalidRequest('A key name cannot contain control characters.', 'name');
  // Rejected rather than trimmed: ' prod' and 'prod' would look like two keys in the table.
  if (name.trim() !== name) throw invalidRequest('A key name cannot start or end with a space.', 'name');
  return { name, nameKey: name.normalize('NFC').toLowerCase() };
}

/**
 * Checks a monthly spend limit (nano; null = none): a non-negative integer below 2^53, the bound
 * of every amount the metering scripts handle. 0 is allowed: a key that may not spend at all.
 */
export function validateSpendLimit(limit: unknown): number | null {
  if (limit === null) return null;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 0 || limit > MAX_SAFE_NANO) {
    throw invalidRequest(
      'spendLimit must be null or a non-negative whole number of nano-units below 2^53',
      'spendLimit',
    );
  }
  return limit;
}

/** A spend limit's window as set: day, week or month. */
export function validateSpendWindow(window: unknown): BudgetWindow {
  if (!isBudgetWindow(window))
    throw invalidRequest(`spendWindow must be one of ${BUDGET_WINDOWS.join(', ')}`, 'spendWindow');
  return window;
}

/** A stored spendLimit field → the limit (absent or unreadable = none). */
export function parseSpendLimit(v: string | null | undefined): number | null {
  if (v === null || v === undefined || v === '') return null;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/** Stored hash → record; null for a missing or foreign hash. */
export function parseKeyRecord(h: Record<string, string>): ApiKeyRecord | null {
  if (!h.id || !h.accountId || !h.name || !h.createdAt) return null;
  return {
    id: h.id,
    accountId: h.accountId,
    name: h.name,
    createdAt: h.createdAt,
    createdBy: h.createdBy || null,
    status: h.status === 'active' ? 'active' : 'deleted',
    format: h.format === 'current' ? 'current' : 'legacy',
    last4: h.last4 ?? '',
    rotatedAt: h.rotatedAt || null,
    deletedAt: h.deletedAt || null,
    spendLimit: parseSpendLimit(h.spendLimit),
    spendWindow: isBudgetWindow(h.spendWindow) ? h.spendWindow : DEFAULT_BUDGET_WINDOW,
    rateLimits: parseRateLimits(RATE_LIMIT_HASH_FIELDS.map((f) => h[f])),
  };
}

export async function getKeyRecord(
  redis: Redis,
  accountId: string,
  keyId: string,
): Promise<ApiKeyRecord | null> {
  return parseKeyRecord(await redis.hgetall(accountKeys(accountId).key(keyId)));
}

// Keys per account are unlimited (KEY-8): read records in bounded pipelines, not one giant reply.
const LIST_BATCH = 500;

/** Oldest first (ties broken by id), as the keys table shows them. */
export async function listKeyRecords(
  redis: Redis,
  accountId: string,
  opts: { includeDeleted?: boolean } = {},
): Promise<ApiKeyRecord[]> {
  const k = accountKeys(accountId);
  const ids = await redis.smembers(k.keys);
  const records: ApiKeyRecord[] = [];
  for (let i = 0; i < ids.length; i += LIST_BATCH) {
    const pipeline = redis.pipeline();
    for (const id of ids.slice(i, i + LIST_BATCH)) pipeline.hgetall(k.key(id));
    for (const [err, value] of (await pipeline.exec()) ?? []) {
      if (err) throw err;
      const record = parseKeyRecord(value as Record<string, string>);
      if (record && (opts.includeDeleted || record.status === 'active')) records.push(record);
    }
  }
  return records.sort((a, b) =>
    a.createdAt === b.createdAt ? a.id.localeCompare(b.id) : a.createdAt.localeCompare(b.createdAt),
  );
}

/**
 * Removes a secret from the global lookup, remembers it as retired (so importLegacy cannot bring it
 * back) and tells every proxy to drop cached lookups and in-flight requests made with it.
 */
export async function retireSecretHash(redis: Redis, hash: string, ref: string): Promise<void> {
  await Promise.all([redis.del(globalKeys.keyByHash(hash)), redis.set(globalKeys.retiredKeyHash(hash), ref)]);
  await announce(redis, channels.keyInvalidated, hash);
}

/** Soft delete (KEY-6). Deleting an already deleted key changes nothing. */
export async function softDeleteKey(
  redis: Redis,
  accountId: string,
  keyId: string,
  now: Date = new Date(),
): Promise<'deleted' | 'already_deleted' | 'not_found'> {
  const k = accountKeys(accountId);
  const result = (await deleteKeyScript.run(redis, [k.key(keyId), k.keyNames], [now.toISOString()])) as [
    string,
    string?,
  ];
  if (result[0] !== 'ok') return result[0] === 'already_deleted' ? 'already_deleted' : 'not_found';
  if (result[1]) await retireSecretHash(redis, result[1], `${accountId}:${keyId}`);
  return 'deleted';
}
