-- settleBatch: settle N requests of one account against a replica's lease, in one script. Each
-- record charges min(cost, what the lease still holds), appends the same audit entry and hourly
-- rollups as settle, and writes the same done key (settle:<holdId>), so every request is charged
-- exactly once whether it is retried in a batch or settled any other way. The lease shrinks by
-- what was charged (and is dropped at zero); a lease still in use has its ttl refreshed.
-- The batch's rollup increments are summed per field first and written once per field (a batch
-- is mostly one key and model): one HINCRBY per record and metric was most of the script's time.
-- KEYS: account, holds, holdExpiry, usage, rollup(hour), rollupHours, done(settle:<holdId>) × n
-- ARGV: leaseId, nowMs, hourStartMs, doneTtlMs, expiresAtMs, n,
--       then per record: holdId, cost, usage block (10 values)
-- Returns {leaseHeldAfter, balanceAfter, charged_1, duplicate_1, ..., charged_n, duplicate_n}.
local account, holds, expiry = KEYS[1], KEYS[2], KEYS[3]
local lease_id = ARGV[1]
local n = tonumber(ARGV[6])
local RECORD = 12

local lease = num(redis.call('HGET', holds, lease_id))
local balance = num(redis.call('HGET', account, 'balance'))
local out = { 0, 0 }
local total = 0
local rollup, fields = {}, {}

local function sum_rollup(u, metrics)
  local prefix = u.key .. '|' .. u.model .. '|'
  for j = 1, #metrics, 2 do
    local v = metrics[j + 1]
    if v ~= '' and v ~= '0' then
      local f = prefix .. metrics[j]
      local cur = rollup[f]
      if cur == nil then
        fields[#fields + 1] = f
        rollup[f] = tonumber(v)
      else
        rollup[f] = cur + tonumber(v)
      end
    end
  end
end
for i = 1, n do
  local base = 7 + (i - 1) * RECORD
  local hold_id, cost = ARGV[base], tonumber(ARGV[base + 1])
  local done = KEYS[6 + i]
  local prev_charged = read_done(done)
  if prev_charged then
    out[#out + 1] = prev_charged
    out[#out + 1] = 1
  else
    local charged = math.min(cost, lease)
    lease = lease - charged
    total = total + charged
    balance = balance - charged
    local u = read_usage(base + 2)
    append_entry(KEYS[4], usage_fields(u, {
      't', 'charge', 'op', 'settle:' .. hold_id, 'amt', int(charged), 'cost', ARGV[base + 1],
      'bal', int(balance), 'ts', ARGV[2],
    }))
    sum_rollup(u, charge_metrics(u, charged))
    write_done(done, charged, balance, ARGV[4])
    out[#out + 1] = charged
    out[#out + 1] = 0
  end
end
for _, f in ipairs(fields) do redis.call('HINCRBY', KEYS[5], f, int(rollup[f])) end
if #fields > 0 then redis.call('ZADD', KEYS[6], ARGV[3], ARGV[3]) end
if total > 0 then
  redis.call('HINCRBY', account, 'balance', int(-total))
  redis.call('HINCRBY', account, 'held', int(-total))
  if lease > 0 then
    redis.call('HSET', holds, lease_id, int(lease))
  else
    redis.call('HDEL', holds, lease_id)
    redis.call('ZREM', expiry, lease_id)
  end
end
if lease > 0 then redis.call('ZADD', expiry, ARGV[5], lease_id) end
out[1] = lease
out[2] = balance
return out
