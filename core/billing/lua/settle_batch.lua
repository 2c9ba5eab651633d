-- settleBatch: settle N calls of one account that carved their holds from a replica's lease, in one
-- script. Each record is charged as settle.lua charges (common.lua's collect): from the lease up to
-- what the call carved, the rest of its cost from the spare balance, never below what stays held,
-- with the uncollected part recorded as `short`; the entry keeps the true cost beside the amount.
-- The batch, not each record, is the exactly-once unit: its done key
-- (settle-batch:<leaseId>:<batchId>; a replica's lease id is random, its batch ids count up)
-- keeps what each record was charged, so a batch sent again (its reply was lost, or the replica
-- restarted and replayed its outbox) charges nothing and answers as the first time. A record is in
-- exactly one batch (the replica's queue hands it out once). One done key per record was a GET and
-- a SET PX per request, a third of Redis's time per leased request, and a key per request kept for
-- a day.
-- A batch sent while its line may not be in the replica's journal (the journal's disk refuses
-- writes), or resent at a replica's start, is sent `per_record`: its records' lines may then be in
-- the journal without the batch's (a crash after the disk took some of them), so a later start would
-- send them again in another batch. Each record then also keeps a done key of its own, settle.lua's
-- (settle:<holdId>, same value), and a record whose key exists is answered from it and charged
-- nothing: exactly once by the hold id, whichever batch carries it.
-- The lease shrinks by what was charged from it (and is dropped at zero); a lease still in use has
-- its ttl refreshed (Redis time).
-- The batch's rollup increments are summed per field first and written once per field (a batch
-- is mostly one key and model): one HINCRBY per record and metric was most of the script's time.
-- Each key's spend of its periods (keySpend `spent:`) is summed the same way: one HINCRBY per key
-- and period in the batch. A leased call is never a limited key's (the proxy reserves per call for those), so
-- no record has a key hold (`h:`) to drop; a batch's lease may itself be filed under its key (`h:`,
-- extend_lease.lua): the key's held then shrinks by what the lease paid.
-- KEYS: account, holds, holdExpiry, usage, rollup(hour), rollupHours,
--       done(settle-batch:<leaseId>:<batchId>), keySpend,
--       per_record only: per record its done(settle:<holdId>)
-- ARGV: leaseId, nowMs, hourStartMs, doneTtlMs, ttlMs, n, periods (spend_periods of nowMs),
--       per_record (0|1), then per record: holdId, cost, carved, usage block (10 values)
-- Returns {leaseHeldAfter, balanceAfter, duplicate, charged_1, short_1, ..., charged_n, short_n}.
local account, holds, expiry = KEYS[1], KEYS[2], KEYS[3]
local lease_id = ARGV[1]
local n = tonumber(ARGV[6])
local per_record = ARGV[8] == '1'
local RECORD = 13

-- A settlement is owed to an account this Redis knows: against a missing one (a Redis that lost its
-- data) it would make a ghost record and a charge of nothing. Refused; the proxy keeps it owed.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('NOACCOUNT the account record is missing (did Redis lose its data?)')
end
local lease_raw = redis.call('HGET', holds, lease_id)
local lease = num(lease_raw)
local totals = redis.call('HMGET', account, 'balance', 'held')
local balance, held_total = num(totals[1]), num(totals[2])
local done = redis.call('GET', KEYS[7])
if done then
  local out = { lease, balance, 1 }
  for c in string.gmatch(done, '[^,]+') do
    out[#out + 1] = tonumber(c)
    out[#out + 1] = 0
  end
  return out
end
local out = { 0, 0, 0 }
local total, from_lease_total = 0, 0
local rollup, fields = {}, {}
local spent, spent_keys = {}, {}
local src = lease_raw and 'lease' or 'none'

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

-- Adds v to sums[f], listing f in `order` the first time: the batch's increments (rollup fields,
-- keys' spend) are summed here and each written once after the loop.
local function add_to(sums, order, f, v)
  local cur = sums[f]
  if cur == nil then
    order[#order + 1] = f
    sums[f] = v
  else
    sums[f] = cur + v
  end
end

local charges = {}
-- Charges record i (its arguments from ARGV[base]) and appends what it was charged to `out`.
local function charge(i, base)
  local hold_id, cost_s, carved_s = ARGV[base], ARGV[base + 1], ARGV[base + 2]
  local cost = tonumber(cost_s)
  local covered = math.min(tonumber(carved_s), lease)
  local charged, short = collect(cost, covered, balance - held_total)
  local from_lease = math.min(cost, covered)
  lease = lease - from_lease
  held_total = held_total - from_lease
  from_lease_total = from_lease_total + from_lease
  total = total + charged
  balance = balance - charged
  local amt = int(charged)
  local u = base + 3
  local args = { KEYS[4], '*', 't', 'charge', 'op', 'settle:' .. hold_id, 'amt', amt, 'cost', cost_s }
  if short > 0 then
    args[#args + 1] = 'short'
    args[#args + 1] = int(short)
  end
  args[#args + 1] = 'held'
  args[#args + 1] = carved_s
  args[#args + 1] = 'src'
  args[#args + 1] = src
  args[#args + 1] = 'bal'
  args[#args + 1] = int(balance)
  args[#args + 1] = 'ts'
  args[#args + 1] = ARGV[2]
  for j = 1, #USAGE_FIELDS do
    local v = ARGV[u + USAGE_AT[j]]
    if v ~= '' then
      args[#args + 1] = USAGE_FIELDS[j]
      args[#args + 1] = v
    end
  end
  redis.call('XADD', unpack(args))
  local names = rollup_names(ARGV[u], ARGV[u + 1])
  add_to(rollup, fields, names.req, 1)
  for j = 1, #ROLLUP_USAGE, 2 do
    local v = ARGV[u + ROLLUP_USAGE[j + 1]]
    if v ~= '' and v ~= '0' then add_to(rollup, fields, names[ROLLUP_USAGE[j]], tonumber(v)) end
  end
  if charged ~= 0 then
    add_to(rollup, fields, names.cost, charged)
    if ARGV[u] ~= '' then add_to(spent, spent_keys, ARGV[u], charged) end
  end
  out[#out + 1] = charged
  out[#out + 1] = short
  charges[i] = amt
  if per_record then write_done(KEYS[8 + i], charged, balance, ARGV[4]) end
end

for i = 1, n do
  local prev = per_record and read_done(KEYS[8 + i]) or nil
  if prev then
    -- Charged before, by another batch (its line lost with the disk's): answered as then, nothing now.
    out[#out + 1] = prev
    out[#out + 1] = 0
    charges[i] = int(prev)
  else
    charge(i, 9 + (i - 1) * RECORD)
  end
end
redis.call('SET', KEYS[7], table.concat(charges, ','), 'PX', ARGV[4])
for _, f in ipairs(fields) do redis.call('HINCRBY', KEYS[5], f, int(rollup[f])) end
if #fields > 0 then redis.call('ZADD', KEYS[6], ARGV[3], ARGV[3]) end
for _, key in ipairs(spent_keys) do add_spent(KEYS[8], key, ARGV[7], spent[key]) end
if total > 0 then redis.call('HINCRBY', account, 'balance', int(-total)) end
if from_lease_total > 0 then
  redis.call('HINCRBY', account, 'held', int(-from_lease_total))
  shrink_key_hold(KEYS[8], lease_id, from_lease_total, lease <= 0)
  if lease > 0 then
    redis.call('HSET', holds, lease_id, int(lease))
  else
    redis.call('HDEL', holds, lease_id)
    redis.call('ZREM', expiry, lease_id)
  end
end
if lease > 0 then redis.call('ZADD', expiry, now_ms() + tonumber(ARGV[5]), lease_id) end
out[1] = lease
out[2] = balance
return out
