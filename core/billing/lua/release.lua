-- release: drop a hold without charging (the call did nothing billable).
-- KEYS: account, holds, holdExpiry   ARGV: holdId
-- Returns the amount released (0 when there was no such hold).
local held = num(redis.call('HGET', KEYS[2], ARGV[1]))
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if held > 0 then redis.call('HINCRBY', KEYS[1], 'held', int(-held)) end
return held
