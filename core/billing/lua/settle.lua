-- settle: charge min(cost, held), drop the hold, append the audit entry and the hourly rollups,
-- all at once, exactly once per holdId.
-- KEYS: account, holds, holdExpiry, done(settle:<holdId>), usage, rollup(hour), rollupHours
-- ARGV: holdId, cost, nowMs, hourStartMs, doneTtlMs, usage block (10 values from ARGV[6])
-- Returns {charged, balance, duplicate(0|1)}.
local account, holds, expiry, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local hold_id, cost = ARGV[1], tonumber(ARGV[2])

local prev_charged, prev_balance = read_done(done)
if prev_charged then return { prev_charged, prev_balance, 1 } end

-- A hold that is gone (released, or swept after its ttl) covers nothing: charging 0 keeps a
-- late or repeated settle from ever taking more than was reserved.
local held = num(redis.call('HGET', holds, hold_id))
local charged = math.min(cost, held)
redis.call('HDEL', holds, hold_id)
redis.call('ZREM', expiry, hold_id)
if held > 0 then redis.call('HINCRBY', account, 'held', int(-held)) end
local balance = redis.call('HINCRBY', account, 'balance', int(-charged))

local u = read_usage(6)
append_entry(KEYS[5], usage_fields(u, {
  't', 'charge', 'op', 'settle:' .. hold_id, 'amt', int(charged), 'cost', ARGV[2],
  'bal', int(balance), 'ts', ARGV[3],
}))
add_rollup(KEYS[6], KEYS[7], ARGV[4], u, charge_metrics(u, charged))
write_done(done, charged, balance, ARGV[5])
return { charged, balance, 0 }
