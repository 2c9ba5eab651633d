-- charge: reserve and settle at once (video is charged when the job is created). Refused when
-- the available balance is below the cost, or when the key has a spend limit and what it may still
-- spend in its window's period (limit − spent − its open holds) is below the cost; a refusal is not
-- recorded, so a retry after a top-up (or a raised limit) can succeed. The account's budget
-- (across its keys) refuses the same way. The charge counts toward
-- the key's spend of its periods (month, day, week).
-- With KEYS[8] and KEYS[9] it also records what was bought, in the same step: a video job's hash
-- (field/value pairs from ARGV[18]) and its place in the account's list (ARGV[17] its id), so a
-- job exists exactly when its charge does. The place is nowMs, or with KEYS[10] (a counter that
-- only grows) max(nowMs × 1000, the last place + 1): records of one millisecond stay in the order
-- they were made in.
-- KEYS: account, done(charge:<id>), usage, rollup(hour), rollupHours, keySpend, key record
--       [, record hash, record index [, record sequence]]
-- ARGV: chargeId, cost, nowMs, hourStartMs, doneTtlMs, usage block (10 values from ARGV[6]),
--       periods (spend_periods of nowMs) [, record id, field, value, ...]
-- Returns {1, charged, balance, duplicate(0|1)}, {0, 0, balance, 0} (the balance) or
-- {2, 0, balance, 0, limit, spent, held, window, source} (a budget: 0 the key's, 1 the account's).
local account, done, keyspend = KEYS[1], KEYS[2], KEYS[6]
local cost = tonumber(ARGV[2])

local prev_charged, prev_balance = read_done(done)
if prev_charged then return { 1, prev_charged, prev_balance, 1 } end

local totals = redis.call('HMGET', account, 'balance', 'held')
local balance, held = num(totals[1]), num(totals[2])
if balance - held < cost then return { 0, 0, balance, 0 } end
local u = read_usage(6)
if u.key ~= '' then
  local room, limit, spent, key_held, window = key_room(KEYS[7], keyspend, u.key, ARGV[16])
  if room and room < cost then return { 2, 0, balance, 0, limit, spent, key_held, window, SOURCE_KEY } end
  local aroom, alimit, aspent, aheld, awindow = account_room(account, keyspend, ARGV[16])
  if aroom and aroom < cost then return { 2, 0, balance, 0, alimit, aspent, aheld, awindow, SOURCE_ACCOUNT } end
end
balance = redis.call('HINCRBY', account, 'balance', int(-cost))

append_entry(KEYS[3], usage_fields(u, {
  't', 'charge', 'op', 'charge:' .. ARGV[1], 'amt', int(cost), 'cost', ARGV[2],
  'bal', int(balance), 'ts', ARGV[3],
}))
add_rollup(KEYS[4], KEYS[5], ARGV[4], u, charge_metrics(u, cost))
add_spent(keyspend, u.key, ARGV[16], cost)
write_done(done, cost, balance, ARGV[5])
if KEYS[8] then
  redis.call('HSET', KEYS[8], unpack(ARGV, 18))
  local place = ARGV[3]
  if KEYS[10] then
    place = math.max(tonumber(ARGV[3]) * 1000, num(redis.call('GET', KEYS[10])) + 1)
    redis.call('SET', KEYS[10], int(place))
    place = int(place)
  end
  redis.call('ZADD', KEYS[9], place, ARGV[17])
end
return { 1, cost, balance, 0 }
