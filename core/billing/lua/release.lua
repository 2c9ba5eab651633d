-- release: drop a hold without charging (the call did nothing billable). A hold of a key with a
-- spend limit stops counting against it; what it took of its key's rate windows comes back.
-- KEYS: account, holds, holdExpiry, keySpend   ARGV: holdId
-- Returns the amount released (0 when there was no such hold).
local hold = redis.call('HGET', KEYS[2], ARGV[1])
if not hold then return 0 end
local held = tonumber(hold)
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if held > 0 then redis.call('HINCRBY', KEYS[1], 'held', int(-held)) end
drop_key_hold(KEYS[4], ARGV[1], held)
drop_window_hold(KEYS[4], ARGV[1], 'release')
return held
