-- settleBatch: settle N requests of one account against a replica's lease, in one script. Each
-- record charges min(cost, what the lease still holds) and appends the same audit entry and hourly
-- rollups as settle. The batch, not each record, is the exactly-once unit: its done key
-- (settle-batch:<leaseId>:<batchId>; a replica's lease id is random, its batch ids count up)
-- keeps what each record was charged, so a batch sent again (its reply was lost) charges nothing
-- and answers as the first time. A record is in exactly one batch (the replica's queue hands it
-- out once). One done key per record was a GET and a SET PX per request, a third of Redis's time
-- per leased request, and a key per request kept for a day.
-- The lease shrinks by what was charged (and is dropped at zero); a lease still in use has its
-- ttl refreshed.
-- The batch's rollup increments are summed per field first and written once per field (a batch
-- is mostly one key and model): one HINCRBY per record and metric was most of the script's time.
-- KEYS: account, holds, holdExpiry, usage, rollup(hour), rollupHours,
--       done(settle-batch:<leaseId>:<batchId>)
-- ARGV: leaseId, nowMs, hourStartMs, doneTtlMs, expiresAtMs, n,
--       then per record: holdId, cost, usage block (10 values)
-- Returns {leaseHeldAfter, balanceAfter, duplicate, charged_1, ..., charged_n}.
local account, holds, expiry = KEYS[1], KEYS[2], KEYS[3]
local lease_id = ARGV[1]
local n = tonumber(ARGV[6])
local RECORD = 12

local lease = num(redis.call('HGET', holds, lease_id))
local balance = num(redis.call('HGET', account, 'balance'))
local done = redis.call('GET', KEYS[7])
if done then
  local out = { lease, balance, 1 }
  for c in string.gmatch(done, '[^,]+') do out[#out + 1] = tonumber(c) end
  return out
end
local out = { 0, 0, 0 }
local total = 0
local rollup, fields = {}, {}

-- Per record this script is the hot path of every leased request, so it builds the entry's XADD
-- arguments in one table (from common.lua's USAGE_FIELDS, with append_entry's rule of leaving out
-- empty values: the entry settle.lua writes) and reuses the rollup field names of a key and model
-- across the batch, instead of several small tables and concatenations per record.
local names_of = {}

local function rollup_names(key, model)
  local by_model = names_of[key]
  if by_model == nil then
    by_model = {}
    names_of[key] = by_model
  end
  local names = by_model[model]
  if names == nil then
    local prefix = key .. '|' .. model .. '|'
    names = { req = prefix .. 'req', cost = prefix .. 'cost' }
    for j = 1, #ROLLUP_USAGE, 2 do names[ROLLUP_USAGE[j]] = prefix .. ROLLUP_USAGE[j] end
    by_model[model] = names
  end
  return names
end

local function add_to_rollup(f, v)
  local cur = rollup[f]
  if cur == nil then
    fields[#fields + 1] = f
    rollup[f] = v
  else
    rollup[f] = cur + v
  end
end

local charges = {}
for i = 1, n do
  local base = 7 + (i - 1) * RECORD
  local hold_id, cost = ARGV[base], ARGV[base + 1]
  local charged = math.min(tonumber(cost), lease)
  lease = lease - charged
  total = total + charged
  balance = balance - charged
  local amt, bal = int(charged), int(balance)
  local u = base + 2
  local args = { KEYS[4], '*', 't', 'charge', 'op', 'settle:' .. hold_id, 'amt', amt, 'cost', cost,
    'bal', bal, 'ts', ARGV[2] }
  for j = 1, #USAGE_FIELDS do
    local v = ARGV[u + USAGE_AT[j]]
    if v ~= '' then
      args[#args + 1] = USAGE_FIELDS[j]
      args[#args + 1] = v
    end
  end
  redis.call('XADD', unpack(args))
  local names = rollup_names(ARGV[u], ARGV[u + 1])
  add_to_rollup(names.req, 1)
  for j = 1, #ROLLUP_USAGE, 2 do
    local v = ARGV[u + ROLLUP_USAGE[j + 1]]
    if v ~= '' and v ~= '0' then add_to_rollup(names[ROLLUP_USAGE[j]], tonumber(v)) end
  end
  if charged ~= 0 then add_to_rollup(names.cost, charged) end
  out[#out + 1] = charged
  charges[i] = amt
end
redis.call('SET', KEYS[7], table.concat(charges, ','), 'PX', ARGV[4])
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
