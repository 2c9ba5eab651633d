-- refund: give back part or all of one charge (a failed video job), exactly once per refundId. The
-- refund names the charge it refunds (`of`, the charge's op id: charge:<id> or settle:<holdId>) and
-- all refunds of one charge together never exceed what it charged. It is an audit entry of its own
-- and lowers the hour's net cost in the rollups of the key and model, and the key's spend of the
-- periods the refund is made in (as the rollups do: a month's spend is its rollups' net cost).
-- With KEYS[9] it is also the failure of what was bought, in the same step: a video job's hash,
-- whose fields (ARGV[18]...) are written with the refund, so a job is failed exactly when it is
-- refunded (no crash can come between the two). A job that is gone (deleted) or already finished
-- (completed, or failed) is left as it is and nothing is refunded: {0, balance, 2}.
-- KEYS: account, done(refund:<id>), usage, rollup(hour), rollupHours, done(<of>), refunded(<of>),
--       keySpend[, record hash]
-- ARGV: refundId, amount, nowMs, hourStartMs, doneTtlMs, usage block (10 values from ARGV[6]), of,
--       periods (spend_periods of nowMs)[, field, value, ...]
-- Returns {refunded, balance, duplicate(0|1|2: the record was finished or gone)}.
local account, done, record = KEYS[1], KEYS[2], KEYS[9]
local amount = tonumber(ARGV[2])

if record then
  local status = redis.call('HGET', record, 'status')
  if not status or status == 'completed' or status == 'failed' then
    return { 0, num(redis.call('HGET', account, 'balance')), 2 }
  end
end

local prev_amount, prev_balance = read_done(done)
if prev_amount then
  if record then redis.call('HSET', record, unpack(ARGV, 18)) end
  return { prev_amount, prev_balance, 1 }
end

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
if record then redis.call('HSET', record, unpack(ARGV, 18)) end
return { amount, balance, 0 }
