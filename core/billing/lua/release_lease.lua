-- releaseLease: give a lease's money back to the account, keeping `keep` (what requests carved
-- from it still need; 0 drops the lease). A lease filed under a key (a batch's) gives the key's
-- held back as much.
-- KEYS: account, holds, holdExpiry, keySpend   ARGV: leaseId, keep
-- Returns {released, leaseHeldAfter}.
local account, holds, expiry = KEYS[1], KEYS[2], KEYS[3]
local lease_id = ARGV[1]
local lease = num(redis.call('HGET', holds, lease_id))
local keep = math.min(tonumber(ARGV[2]), lease)
local released = lease - keep
if released > 0 then redis.call('HINCRBY', account, 'held', int(-released)) end
shrink_key_hold(KEYS[4], lease_id, released, keep <= 0)
if keep > 0 then
  redis.call('HSET', holds, lease_id, int(keep))
else
  redis.call('HDEL', holds, lease_id)
  redis.call('ZREM', expiry, lease_id)
end
return { released, keep }
