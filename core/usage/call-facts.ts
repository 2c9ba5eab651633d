// What the console shows of a call besides its money (issue 37 item 7): its HTTP status, total
// latency, time to first token (streams) and the engine's finish reason — and the calls refused at
// the door (a 4xx/429 after the key was known), which were never charged and so have no ledger
// entry. Written by the proxy when the response ends (proxy/plugins/call-facts.ts), read by the
// console's calls page (console/routes/usage-calls.ts).
//
// Kept apart from the usage stream on purpose: these are observations, not money. A lost write
// costs a "—" in a table, never a wrong balance, so they are written after the response, fire and
// forget, outside the metering scripts; and the ledger's entries and the journal's rows stay as
// they were. Both stores are bounded:
// - a delivered call's facts: one string per call, expiring after FACT_TTL_MS (calls are charged,
//   so how many there are is bounded by what the account pays for);
// - refused calls: one stream per account trimmed to about REFUSED_KEPT entries (a flood of bad
//   requests replaces older refusals, it never grows storage), expiring when the account is quiet.

import type { Redis } from '../redis/client.ts';
import { accountKeys } from '../redis/keyspace.ts';
import { LuaScript } from '../redis/lua.ts';

/** How long a call's facts are kept: the console's default range is 30 days. */
export const FACT_TTL_MS = 30 * 86_400_000;
/** About how many refused calls an account keeps (XADD MAXLEN ~: trimmed in whole nodes). */
export const REFUSED_KEPT = 1000;

export interface CallFact {
  /** HTTP status the client got; 499 when the client left before the response ended. */
  status: number;
  /** From the request's arrival to the response's end. */
  latencyMs: number;
  /** Streams: from the request's arrival to the first token's frame; null for whole answers. */
  ttftMs: number | null;
  /** The engine's finish_reason (`stop`, `length`, `tool_calls`, …); null when it gave none (cut). */
  finishReason: string | null;
}

export interface RefusedCall {
  requestId: string;
  atMs: number;
  status: number;
  /** The error catalogue's code (`invalid_request`, `rate_limit_exceeded`, …). */
  code: string;
  latencyMs: number;
  keyId: string | null;
  /** The model the request named, when it named one. */
  model: string | null;
  /** The route called, e.g. `/v1/chat/completions`. */
  route: string;
}

/** A delivered call's facts, and its key's last use (one round trip: the keys share a slot). */
// Written only while the account exists: a Redis that lost its data (or a write a client queued
// while Redis was down, flushed into the empty one that came back) must get nothing of an account
// it does not hold — the rule every write against an account keeps (docs/faults.md "Redis lost its
// data"). Its hash shares the account's hash tag, so the check is in the same step.
const FACT_SCRIPT = new LuaScript(
  `if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
return 1`,
  'call-fact',
);
const REFUSED_SCRIPT = new LuaScript(
  `if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', unpack(ARGV, 5))
redis.call('PEXPIRE', KEYS[2], ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[3], ARGV[3], ARGV[4]) end
return 1`,
  'call-refused',
);

export async function recordCallFact(
  redis: Redis,
  accountId: string,
  call: { requestId: string; keyId: string },
  f: CallFact,
): Promise<void> {
  const k = accountKeys(accountId);
  const value = JSON.stringify({ s: f.status, l: f.latencyMs, t: f.ttftMs, f: f.finishReason });
  await FACT_SCRIPT.run(
    redis,
    [k.account, k.callFact(call.requestId), k.keyLastUsed],
    [value, FACT_TTL_MS, call.keyId, String(Date.now())],
  );
}

export async function recordRefused(
  redis: Redis,
  accountId: string,
  r: Omit<RefusedCall, 'atMs'>,
): Promise<void> {
  const k = accountKeys(accountId);
  const fields = ['req', r.requestId, 'st', String(r.status), 'code', r.code, 'lat', String(r.latencyMs)];
  fields.push('route', r.route);
  if (r.keyId !== null) fields.push('key', r.keyId);
  if (r.model !== null) fields.push('model', r.model);
  // One slot: on Redis Cluster too it is one round trip.
  await REFUSED_SCRIPT.run(
    redis,
    [k.account, k.refused, k.keyLastUsed],
    [REFUSED_KEPT, FACT_TTL_MS, r.keyId ?? '', String(Date.now()), ...fields],
  );
}

/** When each key of the account last made a call (ms), delivered or refused; a key never used is absent. */
export async function keysLastUsed(redis: Redis, accountId: string): Promise<Map<string, number>> {
  const all = await redis.hgetall(accountKeys(accountId).keyLastUsed);
  return new Map(Object.entries(all).map(([keyId, ms]) => [keyId, Number(ms)]));
}

/** The facts of these calls that are still kept (a call without any is absent). */
export async function callFacts(
  redis: Redis,
  accountId: string,
  requestIds: readonly string[],
): Promise<Map<string, CallFact>> {
  const out = new Map<string, CallFact>();
  const ids = [...new Set(requestIds)];
  if (ids.length === 0) return out;
  const k = accountKeys(accountId);
  const values = await redis.mget(...ids.map((id) => k.callFact(id)));
  ids.forEach((id, i) => {
    const v = values[i];
    if (v == null) return;
    const p = JSON.parse(v) as { s: number; l: number; t: number | null; f: string | null };
    out.set(id, { status: p.s, latencyMs: p.l, ttftMs: p.t, finishReason: p.f });
  });
  return out;
}

/** The refusals kept in [fromMs, toMs), newest first, at most `limit`, optionally of one key. */
export async function refusedCalls(
  redis: Redis,
  accountId: string,
  q: { fromMs: number; toMs: number; keyId?: string; limit: number },
): Promise<RefusedCall[]> {
  if (q.toMs <= q.fromMs) return [];
  // Stream ids are `<Redis ms>-<seq>`: a bare ms bound is a time bound (the end inclusive, so toMs − 1).
  const page = await redis.xrevrange(
    accountKeys(accountId).refused,
    String(q.toMs - 1),
    String(q.fromMs),
    'COUNT',
    REFUSED_KEPT * 2,
  );
  const out: RefusedCall[] = [];
  for (const [id, flat] of page) {
    const r = parseRefused(id, flat);
    if (q.keyId !== undefined && r.keyId !== q.keyId) continue;
    out.push(r);
    if (out.length === q.limit) break;
  }
  return out;
}

function parseRefused(id: string, flat: string[]): RefusedCall {
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) f.set(flat[i]!, flat[i + 1]!);
  return {
    requestId: f.get('req') ?? '',
    atMs: Number(id.split('-')[0]),
    status: Number(f.get('st') ?? 0),
    code: f.get('code') ?? '',
    latencyMs: Number(f.get('lat') ?? 0),
    keyId: f.get('key') ?? null,
    model: f.get('model') ?? null,
    route: f.get('route') ?? '',
  };
}
