// Per-key rate limits (issue 34): requests, input tokens and output tokens per minute, and calls at
// once. A key's own value wins; an unset one falls back to the account-wide default; unset on both
// means no limit. Both are fields of hashes the reserve script already reads (the key record and
// the account), so the limits cost the call's hold no extra round trip: windows.lua checks them in
// the same Lua step that holds the call's credits. This file is the model: the fields, checking
// what a caller sets, and reading a script's answer back.

import { invalidRequest } from '../errors.ts';

export interface RateLimits {
  requestsPerMinute: number | null;
  inputTokensPerMinute: number | null;
  outputTokensPerMinute: number | null;
  concurrentCalls: number | null;
}

export type RateLimitName = keyof RateLimits;

export const RATE_LIMIT_NAMES: readonly RateLimitName[] = [
  'requestsPerMinute',
  'inputTokensPerMinute',
  'outputTokensPerMinute',
  'concurrentCalls',
];

/**
 * The hash fields, in windows.lua's order (LIMIT_FIELDS there). The same names on the key record
 * and on the account hash, so the script reads both with one HMGET each.
 */
export const RATE_LIMIT_FIELDS: Readonly<Record<RateLimitName, string>> = {
  requestsPerMinute: 'lim:rpm',
  inputTokensPerMinute: 'lim:itpm',
  outputTokensPerMinute: 'lim:otpm',
  concurrentCalls: 'lim:conc',
};

/**
 * The largest limit: a window is kept in units of 1/60000 of a token (so a bucket refills by its
 * limit every millisecond, in integers), and limit × 60000 must stay below 2^53 in Lua's doubles.
 */
export const MAX_RATE_LIMIT = 1_000_000_000;

export const NO_RATE_LIMITS: RateLimits = {
  requestsPerMinute: null,
  inputTokensPerMinute: null,
  outputTokensPerMinute: null,
  concurrentCalls: null,
};

export const hasRateLimits = (l: RateLimits): boolean => RATE_LIMIT_NAMES.some((n) => l[n] !== null);

/** A limit as set: a whole number from 1 to MAX_RATE_LIMIT, or null (unset). */
export function validateRateLimits(input: unknown): Partial<RateLimits> {
  if (typeof input !== 'object' || input === null) throw invalidRequest('limits must be an object', 'limits');
  const out: Partial<RateLimits> = {};
  for (const [name, v] of Object.entries(input)) {
    if (!(RATE_LIMIT_NAMES as readonly string[]).includes(name))
      throw invalidRequest(`'${name}' is not a limit (${RATE_LIMIT_NAMES.join(', ')})`, name);
    if (v !== null && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1 || v > MAX_RATE_LIMIT))
      throw invalidRequest(`${name} must be null or a whole number from 1 to ${MAX_RATE_LIMIT}`, name);
    out[name as RateLimitName] = v as number | null;
  }
  return out;
}

/** Stored fields (HMGET in RATE_LIMIT_NAMES order) → limits; absent or unreadable = unset. */
export function parseRateLimits(values: readonly (string | null | undefined)[]): RateLimits {
  const out = { ...NO_RATE_LIMITS };
  RATE_LIMIT_NAMES.forEach((name, i) => {
    const n = Number(values[i] ?? '');
    out[name] = values[i] && Number.isSafeInteger(n) && n > 0 ? n : null;
  });
  return out;
}

/** What a key is held to: its own limit, else the account's default, per limit. */
export function effectiveRateLimits(key: RateLimits, account: RateLimits): RateLimits {
  const out = { ...NO_RATE_LIMITS };
  for (const n of RATE_LIMIT_NAMES) out[n] = key[n] ?? account[n];
  return out;
}

/** One window's standing after a reserve: the vendors' limit, remaining and reset. */
export interface WindowStanding {
  limit: number;
  remaining: number;
  /** Ms (Redis time) until the window is full again. */
  resetMs: number;
}

/** The key's windows as the reserve left them (null: that limit is unset), at Redis time `at`. */
export interface WindowsState {
  at: number;
  requests: WindowStanding | null;
  inputTokens: WindowStanding | null;
  outputTokens: WindowStanding | null;
}

/** A reserve refused by a limit: which, its value, and when a retry can pass. */
export interface RateRefusal {
  limit: RateLimitName;
  value: number;
  retryAfterMs: number;
  windows: WindowsState;
}

/** windows.lua's `which` codes (1-based, RATE_LIMIT_NAMES order). */
const refusedBy = (code: number): RateLimitName => RATE_LIMIT_NAMES[code - 1] ?? 'requestsPerMinute';

/** The 10 values windows.lua's window_reply returns (at, then limit/remaining/reset × 3), from `i`. */
export function windowsAt(r: readonly number[], i: number): WindowsState | null {
  if (r.length < i + 10) return null;
  const standing = (j: number): WindowStanding | null =>
    r[j]! > 0 ? { limit: r[j]!, remaining: r[j + 1]!, resetMs: r[j + 2]! } : null;
  return {
    at: r[i]!,
    requests: standing(i + 1),
    inputTokens: standing(i + 4),
    outputTokens: standing(i + 7),
  };
}

/** A refusal reply tail: which, value, retry ms, then the windows (see reserve.lua). */
export function refusalAt(r: readonly number[], i: number): RateRefusal {
  return {
    limit: refusedBy(r[i]!),
    value: r[i + 1]!,
    retryAfterMs: r[i + 2]!,
    windows: windowsAt(r, i + 3) ?? { at: 0, requests: null, inputTokens: null, outputTokens: null },
  };
}

/** What a key has taken of each rate limit right now: its buckets' fill and its calls running. */
export type RateUse = Record<RateLimitName, number>;

const BUCKET_OF: Readonly<Record<Exclude<RateLimitName, 'concurrentCalls'>, string>> = {
  requestsPerMinute: 'wr:',
  inputTokensPerMinute: 'wi:',
  outputTokensPerMinute: 'wo:',
};

/**
 * A key's current use from its keySpend fields at Redis time `nowMs` (windows.lua): a bucket
 * `used:atMs:limit`, in 1/60000 units, drains by `limit` a millisecond; no field is an empty
 * bucket. What is shown is what a call now would find taken, rounded up to whole units.
 */
export function rateUse(fields: Readonly<Record<RateLimitName, string | null>>, nowMs: number): RateUse {
  const taken = (v: string | null): number => {
    if (v === null) return 0;
    const [used, at, limit] = v.split(':').map(Number) as [number, number, number];
    return Math.max(0, Math.ceil((used - Math.max(0, nowMs - at) * limit) / 60_000));
  };
  return {
    requestsPerMinute: taken(fields.requestsPerMinute),
    inputTokensPerMinute: taken(fields.inputTokensPerMinute),
    outputTokensPerMinute: taken(fields.outputTokensPerMinute),
    concurrentCalls: Math.max(0, Number(fields.concurrentCalls ?? 0)),
  };
}

/** The fields rateUse reads for `keyId`, in RATE_LIMIT_NAMES order. */
export const rateUseFields = (keyId: string): string[] =>
  RATE_LIMIT_NAMES.map((n) => (n === 'concurrentCalls' ? `wc:${keyId}` : `${BUCKET_OF[n]}${keyId}`));
