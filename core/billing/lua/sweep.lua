-- sweep: the sweeper's look at holds the expiry index says are due (core/billing/sweeper.ts). Each
-- id is judged by Redis time: gone (settled or released: drop it from the index), still alive (its
-- owner renewed it: re-file it at its expiry), or expired (void it).
-- KEYS: account, holds, holdExpiry, usage, keySpend
-- ARGV: holdId...
-- Returns per id a pair: {0, 0} gone, {1, amount} a hold voided, {3, amount} a lease voided,
-- {2, expiresAtMs} alive.
local account, holds, expiry = KEYS[1], KEYS[2], KEYS[3]
local now = now_ms()
local out = {}
for i = 1, #ARGV do
  local id = ARGV[i]
  local at = redis.call('ZSCORE', expiry, id)
  if not at and redis.call('HEXISTS', holds, id) == 0 then
    out[#out + 1] = 0
    out[#out + 1] = 0
  elseif at and tonumber(at) > now then
    out[#out + 1] = 2
    out[#out + 1] = tonumber(at)
  else
    out[#out + 1] = is_lease(id) and 3 or 1
    out[#out + 1] = void_hold(account, holds, expiry, KEYS[4], KEYS[5], id, now)
  end
end
return out
