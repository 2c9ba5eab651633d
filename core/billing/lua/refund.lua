-- refund: give back an amount (a failed video job), exactly once per refundId. It is an audit
-- entry of its own and lowers the hour's net cost in the rollups of the key and model.
-- KEYS: account, done(refund:<id>), usage, rollup(hour), rollupHours
-- ARGV: refundId, amount, nowMs, hourStartMs, doneTtlMs, usage block (10 values from ARGV[6])
-- Returns {refunded, balance, duplicate(0|1)}.
local account, done = KEYS[1], KEYS[2]
local amount = tonumber(ARGV[2])

local prev_amount, prev_balance = read_done(done)
if prev_amount then return { prev_amount, prev_balance, 1 } end

local balance = num(redis.call('HGET', account, 'balance'))
if amount > MAX_SAFE - balance then return redis.error_reply('MP_BALANCE_LIMIT') end
balance = redis.call('HINCRBY', account, 'balance', ARGV[2])

local u = read_usage(6)
append_entry(KEYS[3], usage_fields(u, {
  't', 'refund', 'op', 'refund:' .. ARGV[1], 'amt', ARGV[2], 'bal', int(balance), 'ts', ARGV[3],
}))
add_rollup(KEYS[4], KEYS[5], ARGV[4], u, { 'cost', int(-amount), 'refund', ARGV[2] })
write_done(done, amount, balance, ARGV[5])
return { amount, balance, 0 }
