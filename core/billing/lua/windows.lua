-- Per-key rate windows (issue 34), loaded after common.lua into every metering script (scripts.ts).
-- A key's requests, input tokens and output tokens per minute are token buckets, and its calls at
-- once a counter; reserve.lua checks and takes them in the same step that holds the call's credits,
-- so a call costs no extra round trip and any number of proxy replicas see one exact count.
--
-- Why token buckets, not a sliding log or fixed windows: a bucket is two numbers per key and limit
-- (a log of the last minute's calls grows with the limit, and summing it per call costs as much);
-- it refills continuously, so a minute boundary never lets 2N calls through in a second the way
-- fixed windows do, and a long stream is never cut by one (a window is only read at the reserve);
-- and it is what both vendors' headers describe: Anthropic documents its limits as token buckets,
-- and OpenAI's `x-ratelimit-reset-*` is the time until the bucket is full again. So a limit of N a
-- minute admits N at once, then one more every 60/N s.
--
-- A bucket is a field of the account's keySpend hash (one key more in no script: every script
-- that holds, settles, releases or voids already has it), `w<r|i|o>:<keyId>` → `used:atMs:limit`:
-- what is taken, in units of 1/60000 (so it drains by `limit` every millisecond, in integers), as of
-- Redis time `atMs`. A full bucket is no field at all, so an idle key leaves nothing behind.
-- `wc:<keyId>` counts the key's calls running, and `wh:<holdId>` → `keyId:req:in:out:conc:limIn:limOut`
-- records what a hold took, so its settle, release or void gives it back — the same discipline as
-- the credit hold itself (renewed while its call runs, voided by the sweeper when its proxy died):
-- nothing is taken forever.
--   settle: the running slot comes back, and the tokens taken but not used (input counted as the
--           hold counts it, an upper bound; output reserved at the hold's max output tokens): a
--           call that used more than it took leaves the bucket in debt, paid back by the refill;
--   release (nothing billable happened): the slot, the request and all its tokens come back;
--   void (its proxy died): the slot comes back; the tokens stay taken (the call may have used them)
--           and come back by the refill within a minute.
--
-- When a slot comes back no clock says, so a refusal by the calls-at-once limit estimates it (issue
-- 48 item 3): a call that took a slot files its Redis start time at the end of its `wh:` record and
-- in `wt:<keyId>` (the starts of the key's running calls, oldest first, at most MAX_STARTS of them),
-- and a settled one folds its duration into `wd:<keyId>` (the key's recent call duration, ms, an
-- average weighing the newest 1/4; released and voided calls are no measure of a call). The slot the
-- refused call waits for is the oldest running call's: it is expected to end at its start plus the
-- recent duration (a call past it: soon, a quarter of a duration on), and the retry is told a little
-- after that, so the slot is back in Redis (its settle landed) when the retry comes. A key with no
-- duration yet is told the oldest call's elapsed time (a call that has run t is likely to run about
-- as long again), at least the one second it was always told before.
local WINDOW_MS = 60000
-- The key record's and the account's fields, in core/billing/rate-limits.ts RATE_LIMIT_NAMES order.
local LIMIT_FIELDS = { 'lim:rpm', 'lim:itpm', 'lim:otpm', 'lim:conc' }
local BUCKETS = { 'wr:', 'wi:', 'wo:' }
-- The running calls' starts kept per key: the oldest is what a refusal reads, so a key with more
-- running than this loses only the starts of its newest calls (skipped, never wrong), and the
-- field stays small whatever the limit.
local MAX_STARTS = 32

-- The key's limits: its own value, else the account's default (0 = unset); `any` when one is set.
local function read_limits(account, keyrec)
  local k = redis.call('HMGET', keyrec, unpack(LIMIT_FIELDS))
  local a = redis.call('HMGET', account, unpack(LIMIT_FIELDS))
  local lim, any = {}, false
  for i = 1, #LIMIT_FIELDS do
    local v = k[i] or a[i]
    v = v and tonumber(v) or 0
    if v > 0 then any = true else v = 0 end
    lim[i] = v
  end
  return lim, any
end

-- What a bucket holds taken now (never below 0), and the limit it was last written with.
local function bucket_use(keyspend, field, now)
  local v = redis.call('HGET', keyspend, field)
  if not v then return 0, 0 end
  local used, at, limit = string.match(v, '^(%-?%d+):(%d+):(%d+)$')
  if not used then return 0, 0 end
  limit = tonumber(limit)
  used = tonumber(used) - limit * math.max(0, now - tonumber(at))
  if used < 0 then used = 0 end
  return used, limit
end

local function bucket_set(keyspend, field, used, limit, now)
  if used <= 0 then
    redis.call('HDEL', keyspend, field)
  else
    redis.call('HSET', keyspend, field, int(used) .. ':' .. int(now) .. ':' .. int(limit))
  end
end

-- Ms until a slot of the key is expected back (the opening comment says how).
local function slot_retry(keyspend, key, now)
  local f = redis.call('HMGET', keyspend, 'wt:' .. key, 'wd:' .. key)
  local oldest = f[1] and tonumber(string.match(f[1], '^(%d+)'))
  local elapsed = oldest and math.max(0, now - oldest) or 0
  local recent = tonumber(f[2] or '')
  if not recent then return math.max(1000, elapsed) end
  local left = math.max(recent - elapsed, math.floor(recent / 4))
  return left + math.max(50, math.floor(recent / 10))
end

-- Whether a call wanting 1 request, `want_in` and `want_out` tokens fits the key's windows now.
-- Nil when the key has no limit at all. A want above a whole window is cut to the window (the call
-- waits for a full bucket, then takes it all; what it used beyond is a debt). A refusal names the
-- first limit in the way (`refused`, 1-based) and waits until every one in the way has room.
local function window_check(account, keyrec, keyspend, key, want_in, want_out, now)
  local lim, any = read_limits(account, keyrec)
  if not any then return nil end
  local w = { lim = lim, used = { 0, 0, 0 }, cost = { 0, 0, 0 }, now = now, retry = 0 }
  local want = { 1, want_in, want_out }
  for i = 1, 3 do
    if lim[i] > 0 then
      local used = bucket_use(keyspend, BUCKETS[i] .. key, now)
      local cost = math.min(want[i], lim[i]) * WINDOW_MS
      w.used[i], w.cost[i] = used, cost
      local over = used + cost - lim[i] * WINDOW_MS
      if over > 0 then
        if not w.refused then w.refused, w.value = i, lim[i] end
        w.retry = math.max(w.retry, math.ceil(over / lim[i]))
      end
    end
  end
  if lim[4] > 0 and num(redis.call('HGET', keyspend, 'wc:' .. key)) >= lim[4] then
    if not w.refused then w.refused, w.value = 4, lim[4] end
    w.retry = math.max(w.retry, slot_retry(keyspend, key, now))
  end
  return w
end

-- Takes what window_check found room for, filed under the hold.
local function window_take(keyspend, key, hold_id, w)
  for i = 1, 3 do
    if w.lim[i] > 0 then bucket_set(keyspend, BUCKETS[i] .. key, w.used[i] + w.cost[i], w.lim[i], w.now) end
  end
  local conc, started = 0, ''
  if w.lim[4] > 0 then
    redis.call('HINCRBY', keyspend, 'wc:' .. key, 1)
    conc, started = 1, ':' .. int(w.now)
    local starts = redis.call('HGET', keyspend, 'wt:' .. key)
    if not starts then
      redis.call('HSET', keyspend, 'wt:' .. key, int(w.now))
    elseif select(2, string.gsub(starts, ' ', '')) + 1 < MAX_STARTS then
      redis.call('HSET', keyspend, 'wt:' .. key, starts .. ' ' .. int(w.now))
    end
  end
  local c = w.cost
  redis.call('HSET', keyspend, 'wh:' .. hold_id, key .. ':' .. int(c[1] / WINDOW_MS) .. ':' .. int(c[2] / WINDOW_MS)
    .. ':' .. int(c[3] / WINDOW_MS) .. ':' .. conc .. ':' .. int(w.lim[2]) .. ':' .. int(w.lim[3]) .. started)
end

-- A running call of the key that started at `start` ends: its start leaves `wt:` (if it was kept);
-- settled (`measured`), its duration goes into the key's recent duration `wd:`.
local function slot_ended(keyspend, key, start, measured, now)
  local f = 'wt:' .. key
  local starts = redis.call('HGET', keyspend, f)
  if starts then
    local list, gone = {}, false
    for s in string.gmatch(starts, '%d+') do
      if not gone and s == start then gone = true else list[#list + 1] = s end
    end
    if #list == 0 then redis.call('HDEL', keyspend, f) else redis.call('HSET', keyspend, f, table.concat(list, ' ')) end
  end
  if not measured then return end
  local took = math.max(0, now - tonumber(start))
  local recent = tonumber(redis.call('HGET', keyspend, 'wd:' .. key) or '')
  if recent then took = recent + math.floor((took - recent) / 4) end
  redis.call('HSET', keyspend, 'wd:' .. key, int(took))
end

-- Appends the windows' standing to a reply: Redis now, then per bucket limit, remaining and ms
-- until full (0, 0, 0 for an unset limit). `taken`: after window_take.
local function window_reply(w, out, taken)
  out[#out + 1] = w.now
  for i = 1, 3 do
    local l = w.lim[i]
    if l > 0 then
      local used = w.used[i] + (taken and w.cost[i] or 0)
      out[#out + 1] = l
      out[#out + 1] = math.max(0, math.floor((l * WINDOW_MS - used) / WINDOW_MS))
      out[#out + 1] = math.ceil(used / l)
    else
      for _ = 1, 3 do out[#out + 1] = 0 end
    end
  end
  return out
end

-- Hold `id` ends (`how`: 'settle' with the tokens it used, 'release', or 'void'): gives back what
-- it took, as the opening comment says. Declared in common.lua, which void_hold calls it from.
drop_window_hold = function(keyspend, id, how, used_in, used_out)
  local f = 'wh:' .. id
  local v = redis.call('HGET', keyspend, f)
  if not v then return end
  redis.call('HDEL', keyspend, f)
  -- A record made before the start was filed has none (its start is simply not known).
  local key, r, i, o, c, li, lo, start = string.match(v, '^(.+):(%d+):(%d+):(%d+):(%d):(%d+):(%d+):(%d+)$')
  if not key then key, r, i, o, c, li, lo = string.match(v, '^(.+):(%d+):(%d+):(%d+):(%d):(%d+):(%d+)$') end
  if not key then return end
  local now = now_ms()
  if c == '1' and redis.call('HINCRBY', keyspend, 'wc:' .. key, -1) <= 0 then
    redis.call('HDEL', keyspend, 'wc:' .. key)
  end
  if c == '1' and start then slot_ended(keyspend, key, start, how == 'settle', now) end
  if how == 'void' then return end
  local back
  if how == 'release' then
    back = { tonumber(r), tonumber(i), tonumber(o) }
  else
    back = { 0, tonumber(i) - used_in, tonumber(o) - used_out }
  end
  local limits = { 0, tonumber(li), tonumber(lo) }
  for j = 1, 3 do
    if back[j] ~= 0 then
      local used, limit = bucket_use(keyspend, BUCKETS[j] .. key, now)
      if limit == 0 then limit = limits[j] end
      if limit > 0 then bucket_set(keyspend, BUCKETS[j] .. key, used - back[j] * WINDOW_MS, limit, now) end
    end
  end
end
