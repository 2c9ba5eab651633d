-- extendLease: create, grow or renew a proxy replica's credit lease on an account. A lease is an
-- ordinary hold (same holds hash and expiry zset), renewed by its replica while it lives, so the
-- sweeper voids only a dead replica's lease. It grows by at most `add`, never past the available
-- balance, and never past 1/den of what the account has outside other holds, so other replicas can
-- still reserve; growth below `min` is not worth having and is skipped. The ttl (Redis time) is
-- refreshed either way.
-- KEYS: account, holds, holdExpiry, usage, keySpend (a void on the way frees a limited key's hold)
-- ARGV: leaseId, add, den, min, ttlMs, sweepLimit
-- Returns {leaseHeld, grown, availableAfter, voidedHolds, voidedLeases}.
local account, holds, expiry = KEYS[1], KEYS[2], KEYS[3]
local lease_id = ARGV[1]
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
if grow <= 0 or grow < min then grow = 0 end
if grow > 0 then
  lease = lease + grow
  redis.call('HSET', holds, lease_id, int(lease))
  redis.call('HINCRBY', account, 'held', int(grow))
end
if lease > 0 then redis.call('ZADD', expiry, now + tonumber(ARGV[5]), lease_id) end
return { lease, grow, available - grow, vh, vl }
