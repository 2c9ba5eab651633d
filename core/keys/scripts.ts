// The atomic steps of the key lifecycle. Each script touches only keys under one account's hash tag
// (`{a:<id>}`) so it runs unchanged on Redis Cluster; the global `mp:keyhash:*` lookup lives in
// another slot and is written around the script by the caller (see store.ts for the ordering).
import { LuaScript } from '../redis/lua.ts';

/**
 * KEYS: keys set, key hash, key names, had-key flag.
 * ARGV: keyId, nameKey, onlyIfFirst ('1'|'0'), then the record's field/value pairs.
 * The name is claimed with HSETNX in the same script as the record, so two concurrent creates with
 * one name cannot both win; `onlyIfFirst` makes ensureDefaultKey mint at most once per account.
 */
export const createKeyScript = new LuaScript(`
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[4]) == 1 then return 'had_key' end
if redis.call('HSETNX', KEYS[3], ARGV[2], ARGV[1]) == 0 then return 'name_taken' end
redis.call('HSET', KEYS[2], unpack(ARGV, 4))
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('SET', KEYS[4], '1')
return 'ok'
`);

/**
 * KEYS: key hash. ARGV: new hash, new sealed secret, new last4, rotatedAt.
 * Returns {'ok', oldHash} or {'not_found'}. The stored hash is what authenticate() checks, so the old
 * secret stops working the moment this script commits, before its lookup entry is even removed.
 */
export const rotateKeyScript = new LuaScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'hash')
if cur[1] ~= 'active' then return {'not_found'} end
redis.call('HSET', KEYS[1], 'hash', ARGV[1], 'sealed', ARGV[2], 'last4', ARGV[3], 'rotatedAt', ARGV[4], 'format', 'current')
return {'ok', cur[2]}
`);

/**
 * KEYS: key hash, key names. ARGV: deletedAt.
 * Returns {'ok', oldHash}, {'already_deleted'} or {'not_found'}. The sealed secret and hash are
 * dropped so the value can never be shown or restored (KEY-6); the name is freed for reuse.
 */
export const deleteKeyScript = new LuaScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'hash', 'nameKey', 'id')
if not cur[1] then return {'not_found'} end
if cur[1] ~= 'active' then return {'already_deleted'} end
redis.call('HSET', KEYS[1], 'status', 'deleted', 'deletedAt', ARGV[1])
redis.call('HDEL', KEYS[1], 'sealed', 'hash')
if cur[3] and redis.call('HGET', KEYS[2], cur[3]) == cur[4] then redis.call('HDEL', KEYS[2], cur[3]) end
return {'ok', cur[2]}
`);

/**
 * KEYS: key hash, key names. ARGV: the new name, its nameKey.
 * Returns 'ok', 'name_taken' or 'not_found' (no such key, or deleted). The new name is claimed with
 * HSETNX and the old one freed in the same script, so a rename racing a create (or another rename)
 * to one name cannot both win; a change of case only (same nameKey) keeps its claim.
 */
export const renameKeyScript = new LuaScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'nameKey', 'id')
if cur[1] ~= 'active' then return 'not_found' end
if cur[2] ~= ARGV[2] then
  if redis.call('HSETNX', KEYS[2], ARGV[2], cur[3]) == 0 then return 'name_taken' end
  if cur[2] and redis.call('HGET', KEYS[2], cur[2]) == cur[3] then redis.call('HDEL', KEYS[2], cur[2]) end
end
redis.call('HSET', KEYS[1], 'name', ARGV[1], 'nameKey', ARGV[2])
return 'ok'
`);

/**
 * KEYS: key hash. ARGV: the spend limit (nano) or '' to remove it (and its window); the window
 * (day, week, month) or '' to keep the stored one.
 * Returns {'ok', secretHash} or {'not_found'} (no such key, or deleted). The reserve and charge
 * scripts read the limit and window from these fields, so they bind the next reserve the moment
 * this commits; the hash names the cached lookups that proxies drop (they choose the call's hold
 * path by it).
 */
export const setSpendLimitScript = new LuaScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'hash')
if cur[1] ~= 'active' then return {'not_found'} end
if ARGV[1] == '' then
  redis.call('HDEL', KEYS[1], 'spendLimit', 'spendWindow')
else
  redis.call('HSET', KEYS[1], 'spendLimit', ARGV[1])
  if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'spendWindow', ARGV[2]) end
end
return {'ok', cur[2]}
`);

/**
 * KEYS: key hash. ARGV: field/value pairs of the key's rate limits (core/billing/rate-limits.ts),
 * '' to unset one. Returns {'ok', secretHash} or {'not_found'}. The reserve script reads these
 * fields, so a change binds the next reserve the moment this commits.
 */
export const setRateLimitsScript = new LuaScript(`
local cur = redis.call('HMGET', KEYS[1], 'status', 'hash')
if cur[1] ~= 'active' then return {'not_found'} end
for i = 1, #ARGV, 2 do
  if ARGV[i + 1] == '' then redis.call('HDEL', KEYS[1], ARGV[i])
  else redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
return {'ok', cur[2]}
`);
