-- settle: charge a call's cost against its hold, drop the hold, append the audit entry and the
-- hourly rollups, all at once, exactly once per holdId. The hold covers first; a cost above it (the
-- hold was an estimate) or a hold that is gone (voided before the settle arrived) is charged from
-- the spare balance, never below what stays held; what cannot be collected is recorded as `short`.
-- What was charged counts toward the key's spend of its periods (keySpend `spent:`), and a hold of a
-- key with a spend limit stops counting against it (`held:`); the tokens its rate windows reserved
-- and it did not use come back (windows.lua).
-- KEYS: account, holds, holdExpiry, done(settle:<holdId>), usage, rollup(hour), rollupHours, keySpend
-- ARGV: holdId, cost, nowMs, hourStartMs, doneTtlMs, usage block (10 values from ARGV[6]),
--       periods (spend_periods of nowMs)
-- Returns {charged, balance, duplicate(0|1), short}.
local account, holds, expiry, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local hold_id, cost = ARGV[1], tonumber(ARGV[2])

-- A settlement is owed to an account this Redis knows: against a missing one (a Redis that lost its
-- data) it would make a ghost record and a charge of nothing. Refused; the proxy keeps it owed.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('NOACCOUNT the account record is missing (did Redis lose its data?)')
end
local prev_charged, prev_balance = read_done(done)
if prev_charged then return { prev_charged, prev_balance, 1, 0 } end

local totals = redis.call('HMGET', account, 'balance', 'held')
local balance, held_total = num(totals[1]), num(totals[2])
local hold = redis.call('HGET', holds, hold_id)
local held = num(hold)
local charged, short = collect(cost, held, balance - held_total)
if hold then
  redis.call('HDEL', holds, hold_id)
  redis.call('ZREM', expiry, hold_id)
  if held > 0 then redis.call('HINCRBY', account, 'held', int(-held)) end
  drop_key_hold(KEYS[8], hold_id, held)
  drop_window_hold(KEYS[8], hold_id, 'settle', tonumber(ARGV[9]) or 0, tonumber(ARGV[11]) or 0)
end
balance = redis.call('HINCRBY', account, 'balance', int(-charged))

local u = read_usage(6)
add_spent(KEYS[8], u.key, ARGV[16], charged)
append_entry(KEYS[5], usage_fields(u, {
  't', 'charge', 'op', 'settle:' .. hold_id, 'amt', int(charged), 'cost', ARGV[2],
  'short', short > 0 and int(short) or '', 'held', int(held), 'src', hold and 'hold' or 'none',
  'bal', int(balance), 'ts', ARGV[3],
}))
add_rollup(KEYS[6], KEYS[7], ARGV[4], u, charge_metrics(u, charged))
write_done(done, charged, balance, ARGV[5])
return { charged, balance, 0, short }
