-- Prepended to every metering script at load time (see scripts.ts).
-- Amounts are integer nano-units below 2^53, which Lua doubles hold exactly. Numbers become
-- strings through int() because Lua 5.1's tostring switches to exponent form past 1e14
-- ("1e+15"), which HINCRBY and the stream would then carry.
local MAX_SAFE = 9007199254740991
-- Lease ids are minted with this prefix (proxy/billing/leases.ts); a hold id of any other shape is
-- one call's own hold, named by its request id. A void says which of the two it freed.
local LEASE_PREFIX = 'lease_'

local function int(n)
  return string.format('%d', n)
end

local function num(v)
  if not v then return 0 end
  return tonumber(v)
end

-- Redis's own clock in ms. Every hold expiry is set and judged by it, never by a proxy's clock, so
-- a replica whose clock runs fast cannot free other replicas' live holds. (Redis 7 replicates a
-- script's effects, not the script, so TIME is allowed before writes.)
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The usage block every charging script receives at the same place in ARGV, as strings
-- ('' when the caller had no value).
local function read_usage(base)
  return {
    base = base,
    key = ARGV[base], model = ARGV[base + 1], kind = ARGV[base + 2],
    input = ARGV[base + 3], cached = ARGV[base + 4], output = ARGV[base + 5],
    images = ARGV[base + 6], vsec = ARGV[base + 7], vms = ARGV[base + 8], req = ARGV[base + 9],
  }
end

-- One audit entry on the usage stream. Empty values are left out to keep entries small.
local function append_entry(stream, fields)
  local args = { stream, '*' }
  for i = 1, #fields, 2 do
    if fields[i + 1] ~= '' then
      args[#args + 1] = fields[i]
      args[#args + 1] = fields[i + 1]
    end
  end
  return redis.call('XADD', unpack(args))
end

-- The usage fields of a stream entry, in order, and where each is in the usage block (vms, at 8,
-- goes to the rollups only). settle_batch.lua builds entries from the same two lists.
local USAGE_FIELDS = { 'key', 'model', 'kind', 'in', 'cached', 'out', 'img', 'vsec', 'req' }
local USAGE_AT = { 0, 1, 2, 3, 4, 5, 6, 7, 9 }

local function usage_fields(u, fields)
  for j = 1, #USAGE_FIELDS do
    fields[#fields + 1] = USAGE_FIELDS[j]
    fields[#fields + 1] = ARGV[u.base + USAGE_AT[j]]
  end
  return fields
end

-- Hourly rollup fields `<keyId>|<model>|<metric>`; zero and empty metrics are skipped (absent = 0).
-- The service ledger's charges and refunds (kind 'service': the operator's other products spending
-- the same credits) are not API calls: they are in the usage stream, the audit trail, but not in
-- the rollups, which are Inference API Usage and the keys' spend.
local function add_rollup(rollup, hours, hour, u, metrics)
  if u.kind == 'service' then return end
  local prefix = u.key .. '|' .. u.model .. '|'
  for i = 1, #metrics, 2 do
    local v = metrics[i + 1]
    if v ~= '' and v ~= '0' then redis.call('HINCRBY', rollup, prefix .. metrics[i], v) end
  end
  redis.call('ZADD', hours, hour, hour)
end

-- The rollup metrics a charge adds besides 'req' (1) and 'cost' (the charge), with where each is in
-- the usage block. settle_batch.lua sums the same list.
local ROLLUP_USAGE = { 'in', 3, 'cached', 4, 'out', 5, 'img', 6, 'vms', 8 }

local function charge_metrics(u, charged)
  local metrics = { 'req', '1' }
  for j = 1, #ROLLUP_USAGE, 2 do
    metrics[#metrics + 1] = ROLLUP_USAGE[j]
    metrics[#metrics + 1] = ARGV[u.base + ROLLUP_USAGE[j + 1]]
  end
  metrics[#metrics + 1] = 'cost'
  metrics[#metrics + 1] = int(charged)
  return metrics
end

-- What a call costing `cost` is charged when `covered` of it is already held for it: the held part
-- first, the rest from the account's spare balance (balance − all holds), never past it. So a call
-- whose hold was too small, or was voided before it settled, is still charged what it cost where
-- the balance allows, and the balance never goes below what stays held. Returns charged, short.
local function collect(cost, covered, spare)
  if spare < 0 then spare = 0 end
  local from_hold = math.min(cost, covered)
  local charged = from_hold + math.min(cost - from_hold, spare)
  return charged, cost - charged
end

-- Done records are "<a>:<b>" integer pairs: enough to answer a retry with the first answer.
local function read_done(key)
  local d = redis.call('GET', key)
  if not d then return nil end
  local a, b = string.match(d, '^(%-?%d+):(%-?%d+)$')
  return tonumber(a), tonumber(b)
end

local function write_done(key, a, b, ttl_ms)
  redis.call('SET', key, int(a) .. ':' .. int(b), 'PX', ttl_ms)
end

local function is_lease(id)
  return string.sub(id, 1, #LEASE_PREFIX) == LEASE_PREFIX
end

-- Per-key spend (keyspace.ts keySpend, one hash per account). `periods` is what key-spend.ts
-- spendPeriods makes of the report clock the caller passes (the clock of the rollups):
-- 'YYYYMM|YYYYMMDD|wYYYYMMDD', the UTC month, day and ISO week (by its Monday). A charge counts in
-- all three, so a key's spend in any period equals its usage entries' over it, and a limit set or
-- a window changed mid-period sees what was already spent. A bare 'YYYYMM' (a caller from before
-- the windows) is the month alone. A call without a key ('') is counted nowhere.
local function spend_periods(periods)
  local m, d, w = string.match(periods, '^(%d+)|(%d+)|(w%d+)$')
  if not m then return { periods } end
  return { m, d, w }
end

-- The account's own spend across all its keys (its budget's count) is kept as a key named `*`
-- (no key id has that shape): `spent:*:<period>`, `held:*`, so the ledger check proves it the same
-- way. Counted always, budget or not, as a key's is.
local ACCOUNT_KEY = '*'

local function add_spent(keyspend, key, periods, amount)
  if key == '' or amount == 0 then return end
  local list = spend_periods(periods)
  -- Since when `*` counts (ledger.ts): '0' for an account that had spent nothing before (complete),
  -- else the day it began — an install upgraded mid-period has earlier keyed spend `*` never saw,
  -- so the ledger check leaves out the periods that began before it. Looked up once per account.
  if redis.call('HEXISTS', keyspend, 'since:' .. ACCOUNT_KEY) == 0 then
    local earlier = redis.call('HSCAN', keyspend, '0', 'MATCH', 'spent:*', 'COUNT', 1000)[2]
    redis.call('HSET', keyspend, 'since:' .. ACCOUNT_KEY, #earlier == 0 and '0' or (list[2] or list[1]))
  end
  for _, p in ipairs(list) do
    redis.call('HINCRBY', keyspend, 'spent:' .. key .. ':' .. p, int(amount))
    redis.call('HINCRBY', keyspend, 'spent:' .. ACCOUNT_KEY .. ':' .. p, int(amount))
  end
end

-- A key's budget window (its record's `spendWindow`; absent = month): where its period is in
-- spend_periods' list, and its code in the scripts' replies (key-spend.ts budgetWindowOf).
local WINDOW_AT = { month = 1, day = 2, week = 3 }
local WINDOW_CODE = { day = 1, week = 2, month = 3 }

-- What a key may still spend in its window's current period, or nil when it has no spend limit:
-- its limit − what it spent in the period − what its open holds hold. Also returns the three and
-- the window's code, for the refusal's message. A key record that does not exist (a call without
-- a key) has no limit.
local function budget_room(rec, keyspend, key, periods)
  if not rec[1] then return nil end
  local window = WINDOW_AT[rec[2] or 'month'] and (rec[2] or 'month') or 'month'
  local list = spend_periods(periods)
  local period = list[WINDOW_AT[window]] or list[1]
  local s = redis.call('HMGET', keyspend, 'spent:' .. key .. ':' .. period, 'held:' .. key)
  local spent, held = num(s[1]), num(s[2])
  local limit = tonumber(rec[1])
  return limit - spent - held, limit, spent, held, WINDOW_CODE[window]
end

local function key_room(keyrec, keyspend, key, periods)
  return budget_room(redis.call('HMGET', keyrec, 'spendLimit', 'spendWindow'), keyspend, key, periods)
end

-- The same for the account's budget (its hash's `budget`, `budgetWindow`; issue 34): what all its
-- keys together may still spend in the window's period. Nil when the account has none.
local function account_room(account, keyspend, periods)
  return budget_room(redis.call('HMGET', account, 'budget', 'budgetWindow'), keyspend, ACCOUNT_KEY, periods)
end

-- Which budget bound a hold or refused a call, in the scripts' replies (key-spend.ts).
local SOURCE_KEY, SOURCE_ACCOUNT = 0, 1

-- A hold's filed share `f` (`h:<id>` under a key with a limit, `ah:<id>` under the account's
-- budget) shrank by `by`; `gone`: the hold no longer exists. The share comes off that budget's
-- `held` (a field at 0 is dropped, so the hash keeps only live ones).
local function shrink_filed(keyspend, f, by, gone)
  local key = redis.call('HGET', keyspend, f)
  if not key then return end
  if gone then redis.call('HDEL', keyspend, f) end
  if by > 0 then
    local hf = 'held:' .. key
    if redis.call('HINCRBY', keyspend, hf, int(-by)) == 0 then redis.call('HDEL', keyspend, hf) end
  end
end

-- Hold `id` shrank by `by` (a batch's lease its lines were billed from, or gave back); `gone`: it
-- no longer exists. Both its key's share and its share of the account's budget follow.
local function shrink_key_hold(keyspend, id, by, gone)
  shrink_filed(keyspend, 'h:' .. id, by, gone)
  shrink_filed(keyspend, 'ah:' .. id, by, gone)
end

-- Hold `id` (of `amount`) is settled, released or voided: its shares come off whatever held them.
local function drop_key_hold(keyspend, id, amount)
  shrink_key_hold(keyspend, id, amount, true)
end

-- A hold's share of its key's rate windows goes back when the hold ends (windows.lua, loaded after
-- this file, defines it).
local drop_window_hold

-- Voids hold `id`: its owner stopped renewing it (the proxy crashed, or was cut off from Redis for
-- longer than the hold's ttl). Its money goes back to the available balance (and to its key's
-- room under a spend limit), and the ledger says so in an entry of its own, with the reason: a
-- void is never a silent "free". Returns the amount.
local function void_hold(account, holds, expiry, stream, keyspend, id, now)
  local amount = num(redis.call('HGET', holds, id))
  redis.call('HDEL', holds, id)
  redis.call('ZREM', expiry, id)
  if amount > 0 then redis.call('HINCRBY', account, 'held', int(-amount)) end
  local lease = is_lease(id)
  -- A replica's lease is never a limited key's hold (the proxy reserves per call for those); a
  -- batch's lease may be (extend_lease.lua with a key): its share comes off the key's held too.
  drop_key_hold(keyspend, id, amount)
  if not lease then drop_window_hold(keyspend, id, 'void') end
  local balance = num(redis.call('HGET', account, 'balance'))
  append_entry(stream, {
    't', 'void', 'op', 'void:' .. id, 'amt', int(amount), 'bal', int(balance), 'ts', int(now),
    'reason', lease and 'lease_expired' or 'hold_expired', lease and 'lease' or 'req', id,
  })
  return amount
end

-- Voids up to `limit` holds of one account whose expiry has passed. Returns how many calls' holds
-- and how many leases.
local function void_expired(account, holds, expiry, stream, keyspend, now, limit)
  local ids = redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, limit)
  local leases = 0
  for _, id in ipairs(ids) do
    void_hold(account, holds, expiry, stream, keyspend, id, now)
    if is_lease(id) then leases = leases + 1 end
  end
  return #ids - leases, leases
end
