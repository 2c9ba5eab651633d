-- reserve: hold up to `max` (at least `min`) of the available balance until settle or release. The
-- owner renews the hold while its call runs (renew.lua); only a hold whose owner stopped renewing it
-- reaches its expiry and is voided.
-- KEYS: account, holds, holdExpiry, done(settle:<holdId>), usage
-- ARGV: holdId, min, max, ttlMs, sweepLimit
-- Returns {1, held, availableAfter, voidedHolds, voidedLeases} or {0, available, voidedHolds,
-- voidedLeases}.
local account, holds, expiry, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local hold_id = ARGV[1]
local min, max = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()

-- Expired holds are voided here too, so a crashed proxy's hold never blocks an account that the
-- sweeper has not reached yet.
local vh, vl = void_expired(account, holds, expiry, KEYS[5], now, tonumber(ARGV[5]))

local totals = redis.call('HMGET', account, 'balance', 'held')
local balance, held = num(totals[1]), num(totals[2])

-- A retried reserve returns the hold it already made instead of holding twice.
local existing = redis.call('HGET', holds, hold_id)
if existing then return { 1, tonumber(existing), balance - held, vh, vl } end
if redis.call('EXISTS', done) == 1 then return redis.error_reply('MP_HOLD_SETTLED') end

local available = balance - held
if available < min then return { 0, available, vh, vl } end
local amount = math.min(max, available)
redis.call('HSET', holds, hold_id, int(amount))
redis.call('ZADD', expiry, now + tonumber(ARGV[4]), hold_id)
redis.call('HINCRBY', account, 'held', int(amount))
return { 1, amount, available - amount, vh, vl }
