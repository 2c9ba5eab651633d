-- refund: give back part or all of one charge (a failed video job), exactly once per refundId. The
-- refund names the charge it refunds (`of`, the charge's op id: charge:<id> or settle:<holdId>) and
-- all refunds of one charge together never exceed what it charged. It is an audit entry of its own
-- and lowers the hour's net cost in the rollups of the key and model, and the key's spend of the
-- month the refund is made in (as the rollups do: a month's spend is its rollups' net cost).
-- KEYS: account, done(refund:<id>), usage, rollup(hour), rollupHours, done(<of>), refunded(<of>),
--       keySpend
-- ARGV: refundId, amount, nowMs, hourStartMs, doneTtlMs, usage block (10 values from ARGV[6]), of,
--       month (YYYYMM of nowMs)
-- Returns {refunded, balance, duplicate(0|1)}.
local account, done = KEYS[1], KEYS[2]
local amount = tonumber(ARGV[2])

local prev_amount, prev_balance = read_done(done)
if prev_amount then return { prev_amount, prev_balance, 1 } end

local charged = read_done(KEYS[6])
if not charged then return redis.error_reply('MP_REFUND_UNKNOWN_CHARGE') end
local already = num(redis.call('GET', KEYS[7]))
if already + amount > charged then return redis.error_reply('MP_REFUND_EXCEEDS_CHARGE') end

local balance = num(redis.call('HGET', account, 'balance'))
if amount > MAX_SAFE - balance then return redis.error_reply('MP_BALANCE_LIMIT') end
balance = redis.call('HINCRBY', account, 'balance', ARGV[2])

local u = read_usage(6)
append_entry(KEYS[3], usage_fields(u, {
  't', 'refund', 'op', 'refund:' .. ARGV[1], 'of', ARGV[16], 'amt', ARGV[2], 'bal', int(balance),
  'ts', ARGV[3],
}))
add_rollup(KEYS[4], KEYS[5], ARGV[4], u, { 'cost', int(-amount), 'refund', ARGV[2] })
add_spent(KEYS[8], u.key, ARGV[17], -amount)
redis.call('SET', KEYS[7], int(already + amount), 'PX', ARGV[5])
write_done(done, amount, balance, ARGV[5])
return { amount, balance, 0 }
