-- reserve: hold up to `max` (at least `min`) of the available balance until settle or release. The
-- owner renews the hold while its call runs (renew.lua); only a hold whose owner stopped renewing it
-- reaches its expiry and is voided.
-- A key with a spend limit (its record's `spendLimit`, per its `spendWindow`: day, week or month)
-- is held to it in the same step: the hold is also at most what the key may still spend in the
-- window's period (limit − spent − its open holds),
-- refused with its own answer when that is below `min`, so the proxy can say it was the key's
-- limit and not the balance; the hold is then filed as the key's (keySpend `h:`/`held:`).
-- A key with rate limits (its own or the account's defaults) takes its share of its windows in the
-- same step (windows.lua): one request, `inTokens` and `outTokens`, and a running slot.
-- KEYS: account, holds, holdExpiry, done(settle:<holdId>), usage, keySpend, key record
-- ARGV: holdId, min, max, ttlMs, sweepLimit, keyId ('' for none), periods (spend_periods),
--       inTokens, outTokens
-- The account's budget (its hash's `budget`, per `budgetWindow`) bounds every keyed call's hold the
-- same way, after the key's; such a hold is filed as the account's (keySpend `ah:`/`held:*`).
-- Returns {1, held, availableAfter, voidedHolds, voidedLeases, bound(0|1), limit, spent, keyHeld,
-- window, source} (bound: a budget lowered the hold; the next four are that budget's, 0 without
-- one; source 0 the key's, 1 the account's), followed by the windows' standing (window_reply)
-- when the key has a rate limit;
-- {0, available, voidedHolds, voidedLeases} (the balance),
-- {2, available, voidedHolds, voidedLeases, limit, spent, held, window, source} (a budget), or
-- {3, available, voidedHolds, voidedLeases, which, limitValue, retryMs, windows' standing} (a rate
-- limit: which is 1 requests, 2 input tokens, 3 output tokens, 4 calls at once).
local account, holds, expiry, done, keyspend = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6]
local hold_id, key = ARGV[1], ARGV[6]
local min, max = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()

-- Expired holds are voided here too, so a crashed proxy's hold never blocks an account that the
-- sweeper has not reached yet.
local vh, vl = void_expired(account, holds, expiry, KEYS[5], keyspend, now, tonumber(ARGV[5]))

local totals = redis.call('HMGET', account, 'balance', 'held')
local balance, held = num(totals[1]), num(totals[2])

-- A retried reserve returns the hold it already made instead of holding twice.
local existing = redis.call('HGET', holds, hold_id)
if existing then return { 1, tonumber(existing), balance - held, vh, vl, 0, 0, 0, 0, 0, 0 } end
if redis.call('EXISTS', done) == 1 then return redis.error_reply('MP_HOLD_SETTLED') end

local available = balance - held
if available < min then return { 0, available, vh, vl } end
local amount = math.min(max, available)

local room, limit, spent, key_held, window = nil, 0, 0, 0, 0
if key ~= '' then room, limit, spent, key_held, window = key_room(KEYS[7], keyspend, key, ARGV[7]) end
local bound = 0
if room then
  if room < min then return { 2, available, vh, vl, limit, spent, key_held, window, SOURCE_KEY } end
  if room < amount then
    amount = room
    bound = 1
  end
else
  limit, spent, key_held, window = 0, 0, 0, 0
end
-- The account's budget (across all its keys) bounds the hold the same way, after the key's: the
-- refusal or the lowered hold names whichever budget is tighter.
local source = SOURCE_KEY
local aroom, alimit, aspent, aheld, awindow = nil, 0, 0, 0, 0
if key ~= '' then aroom, alimit, aspent, aheld, awindow = account_room(account, keyspend, ARGV[7]) end
if aroom then
  if aroom < min then return { 2, available, vh, vl, alimit, aspent, aheld, awindow, SOURCE_ACCOUNT } end
  if aroom < amount then
    amount = aroom
    bound = 1
    source = SOURCE_ACCOUNT
    limit, spent, key_held, window = alimit, aspent, aheld, awindow
  end
end

-- The key's rate windows (windows.lua), checked after the money so a call the balance refuses is
-- still told so (a retry after a window would not help it), and before anything is written.
local win = nil
if key ~= '' then
  win = window_check(account, KEYS[7], keyspend, key, tonumber(ARGV[8] or '0'), tonumber(ARGV[9] or '0'), now)
  if win and win.refused then
    return window_reply(win, { 3, available, vh, vl, win.refused, win.value, win.retry }, false)
  end
end

if room and amount > 0 then
  redis.call('HSET', keyspend, 'h:' .. hold_id, key)
  redis.call('HINCRBY', keyspend, 'held:' .. key, int(amount))
end
if aroom and amount > 0 then
  redis.call('HSET', keyspend, 'ah:' .. hold_id, ACCOUNT_KEY)
  redis.call('HINCRBY', keyspend, 'held:' .. ACCOUNT_KEY, int(amount))
end
if win then window_take(keyspend, key, hold_id, win) end

redis.call('HSET', holds, hold_id, int(amount))
redis.call('ZADD', expiry, now + tonumber(ARGV[4]), hold_id)
redis.call('HINCRBY', account, 'held', int(amount))
local out = { 1, amount, available - amount, vh, vl, bound, limit, spent, key_held, window, source }
if win then window_reply(win, out, true) end
return out
