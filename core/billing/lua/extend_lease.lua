-- extendLease: create, grow or renew a proxy replica's credit lease on an account. A lease is an
-- ordinary hold (same holds hash and expiry zset), renewed by its replica while it lives, so the
-- sweeper voids only a dead replica's lease. It grows by at most `add`, never past the available
-- balance, and never past 1/den of what the account has outside other holds, so other replicas can
-- still reserve; growth below `min` is not worth having and is skipped. The ttl (Redis time) is
-- refreshed either way.
-- With a key (a batch's lease, held for the batch's key): a key with a spend limit also bounds the
-- growth by what it may still spend in its window's period (limit − spent − its open holds, as
-- reserve.lua), and the growth is filed as the key's hold (keySpend `h:`/`held:`), so the key's
-- other calls and batches see it; the lines' settlements and the release give it back.
-- The account's budget across its keys (its hash's `budget`, per `budgetWindow`) bounds a keyed
-- lease's growth the same way, after the key's, and the growth is filed as the account's hold
-- (keySpend `ah:`/`held:*`), as reserve.lua files a call's: a batch's estimate counts against the
-- account's budget while it runs, and its lines' charges in its spend (settle_batch.lua).
-- KEYS: account, holds, holdExpiry, usage, keySpend (a void on the way frees a limited key's hold),
--       key record (the key's; any of the account's tag without a key)
-- ARGV: leaseId, add, den, min, ttlMs, sweepLimit, keyId ('' for none), periods (spend_periods)
-- Returns {leaseHeld, grown, availableAfter, voidedHolds, voidedLeases, keyBound(0|1), limit, spent,
-- keyHeld, window, source} (keyBound: a budget, not the balance, cut the growth; the next four are
-- that budget's, 0 without one; source 0 the key's, 1 the account's).
local account, holds, expiry = KEYS[1], KEYS[2], KEYS[3]
local lease_id, key = ARGV[1], ARGV[7] or ''
local add, den, min = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms()

local vh, vl = void_expired(account, holds, expiry, KEYS[4], KEYS[5], now, tonumber(ARGV[6]))

local totals = redis.call('HMGET', account, 'balance', 'held')
local balance, held = num(totals[1]), num(totals[2])
local lease = num(redis.call('HGET', holds, lease_id))
local available = balance - held
-- den is a small integer and every amount is below 2^53, so the floored quotient is exact.
local cap = math.floor((available + lease) / den) - lease
local grow = math.min(add, available, cap)
local room, limit, spent, key_held, window = nil, 0, 0, 0, 0
if key ~= '' and add > 0 then room, limit, spent, key_held, window = key_room(KEYS[6], KEYS[5], key, ARGV[8]) end
local bound = 0
if room and room < grow then
  grow = math.max(room, 0)
  bound = 1
end
if not room then limit, spent, key_held, window = 0, 0, 0, 0 end
-- The account's budget, after the key's: whichever cuts the growth more is the one named.
local source = SOURCE_KEY
local aroom, alimit, aspent, aheld, awindow = nil, 0, 0, 0, 0
if key ~= '' and add > 0 then aroom, alimit, aspent, aheld, awindow = account_room(account, KEYS[5], ARGV[8]) end
if aroom and aroom < grow then
  grow = math.max(aroom, 0)
  bound = 1
  source = SOURCE_ACCOUNT
  limit, spent, key_held, window = alimit, aspent, aheld, awindow
end
if grow <= 0 or grow < min then grow = 0 end
if grow > 0 then
  lease = lease + grow
  redis.call('HSET', holds, lease_id, int(lease))
  redis.call('HINCRBY', account, 'held', int(grow))
  if room then
    redis.call('HSET', KEYS[5], 'h:' .. lease_id, key)
    redis.call('HINCRBY', KEYS[5], 'held:' .. key, int(grow))
  end
  if aroom then
    redis.call('HSET', KEYS[5], 'ah:' .. lease_id, ACCOUNT_KEY)
    redis.call('HINCRBY', KEYS[5], 'held:' .. ACCOUNT_KEY, int(grow))
  end
end
if lease > 0 then redis.call('ZADD', expiry, now + tonumber(ARGV[5]), lease_id) end
return { lease, grow, available - grow, vh, vl, bound, limit, spent, key_held, window, source }
