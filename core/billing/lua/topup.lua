-- topUp: add credits exactly once per topUpId. Refused past 2^53 - 1 nano so that every amount a
-- script touches stays exact in Lua's doubles.
-- KEYS: account, done(topup:<id>), usage
-- ARGV: topUpId, amount, nowMs, doneTtlMs, note
-- Returns {balance, duplicate(0|1)}.
local account, done = KEYS[1], KEYS[2]
local amount = tonumber(ARGV[2])

local _, prev_balance = read_done(done)
if prev_balance then return { prev_balance, 1 } end

local balance = num(redis.call('HGET', account, 'balance'))
if amount > MAX_SAFE - balance then return redis.error_reply('MP_BALANCE_LIMIT') end
balance = redis.call('HINCRBY', account, 'balance', ARGV[2])

append_entry(KEYS[3], {
  't', 'topup', 'op', 'topup:' .. ARGV[1], 'amt', ARGV[2], 'bal', int(balance), 'ts', ARGV[3],
  'note', ARGV[5],
})
write_done(done, amount, balance, ARGV[4])
return { balance, 0 }
