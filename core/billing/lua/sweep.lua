-- sweepExpiredHolds: release holds whose expiry has passed (a proxy crashed between reserve and
-- settle). KEYS: account, holds, holdExpiry   ARGV: nowMs, limit   Returns how many were released.
return sweep(KEYS[1], KEYS[2], KEYS[3], ARGV[1], tonumber(ARGV[2]))
