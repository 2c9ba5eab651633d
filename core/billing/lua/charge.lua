-- charge: reserve and settle at once (video is charged when the job is created). Refused when
-- the available balance is below the cost; a refusal is not recorded, so a retry after a
-- top-up can succeed.
-- With KEYS[6] and KEYS[7] it also records what was bought, in the same step: a video job's hash
-- (field/value pairs from ARGV[17]) and its place in the account's list (ARGV[16] its id), so a
-- job exists exactly when its charge does. The place is nowMs, or with KEYS[8] (a counter that
-- only grows) max(nowMs × 1000, the last place + 1): records of one millisecond stay in the order
-- they were made in.
-- KEYS: account, done(charge:<id>), usage, rollup(hour), rollupHours[, record hash, record index
--       [, record sequence]]
-- ARGV: chargeId, cost, nowMs, hourStartMs, doneTtlMs, usage block (10 values from ARGV[6])
--       [, record id, field, value, ...]
-- Returns {ok(0|1), charged, balance, duplicate(0|1)}.
local account, done = KEYS[1], KEYS[2]
local cost = tonumber(ARGV[2])

local prev_charged, prev_balance = read_done(done)
if prev_charged then return { 1, prev_charged, prev_balance, 1 } end

local totals = redis.call('HMGET', account, 'balance', 'held')
local balance, held = num(totals[1]), num(totals[2])
if balance - held < cost then return { 0, 0, balance, 0 } end
balance = redis.call('HINCRBY', account, 'balance', int(-cost))

local u = read_usage(6)
append_entry(KEYS[3], usage_fields(u, {
  't', 'charge', 'op', 'charge:' .. ARGV[1], 'amt', int(cost), 'cost', ARGV[2],
  'bal', int(balance), 'ts', ARGV[3],
}))
add_rollup(KEYS[4], KEYS[5], ARGV[4], u, charge_metrics(u, cost))
write_done(done, cost, balance, ARGV[5])
if KEYS[6] then
  redis.call('HSET', KEYS[6], unpack(ARGV, 17))
  local place = ARGV[3]
  if KEYS[8] then
    place = math.max(tonumber(ARGV[3]) * 1000, num(redis.call('GET', KEYS[8])) + 1)
    redis.call('SET', KEYS[8], int(place))
    place = int(place)
  end
  redis.call('ZADD', KEYS[7], place, ARGV[16])
end
return { 1, cost, balance, 0 }
