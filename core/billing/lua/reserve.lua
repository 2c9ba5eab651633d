-- reserve: hold up to `max` (at least `min`) of the available balance until settle/release/expiry.
-- KEYS: account, holds, holdExpiry, done(settle:<holdId>)
-- ARGV: holdId, min, max, expiresAtMs, nowMs, sweepLimit
-- Returns {1, held, availableAfter} or {0, available}.
local account, holds, expiry, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local hold_id = ARGV[1]
local min, max = tonumber(ARGV[2]), tonumber(ARGV[3])

-- Expired holds are freed here too, so a crashed proxy's hold never blocks an account that the
-- sweeper has not visited yet.
sweep(account, holds, expiry, ARGV[5], tonumber(ARGV[6]))

local totals = redis.call('HMGET', account, 'balance', 'held')
local balance, held = num(totals[1]), num(totals[2])

-- A retried reserve returns the hold it already made instead of holding twice.
local existing = redis.call('HGET', holds, hold_id)
if existing then return { 1, tonumber(existing), balance - held } end
if redis.call('EXISTS', done) == 1 then return redis.error_reply('MP_HOLD_SETTLED') end

local available = balance - held
if available < min then return { 0, available } end
local amount = math.min(max, available)
redis.call('HSET', holds, hold_id, int(amount))
redis.call('ZADD', expiry, ARGV[4], hold_id)
redis.call('HINCRBY', account, 'held', int(amount))
return { 1, amount, available - amount }
