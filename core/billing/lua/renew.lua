-- renew: a live proxy pushes the expiry of holds it owns on one account to ttl past now (Redis
-- time). Holds that are gone (settled, or voided while the owner was cut off) are named back.
-- KEYS: holds, holdExpiry
-- ARGV: ttlMs, holdId...
-- Returns the ids that are gone.
local at = now_ms() + tonumber(ARGV[1])
local gone = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  if redis.call('HEXISTS', KEYS[1], id) == 1 then
    redis.call('ZADD', KEYS[2], at, id)
  else
    gone[#gone + 1] = id
  end
end
return gone
