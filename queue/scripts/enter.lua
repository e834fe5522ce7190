-- enter: put a user in a room's queue, or report where they already are.
--
-- KEYS[1] cfg     HASH  room configuration (exists iff the room exists)
-- KEYS[2] seq     STRING ticket counter
-- KEYS[3] queue   ZSET  member = user id, score = ticket number
-- KEYS[4] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[5] tokens  HASH  user id -> entry token
-- KEYS[6] stats   HASH  measured admission rate and counters
-- KEYS[7] seen    ZSET  member = waiting user id, score = last seen (ms)
-- ARGV[1] user id
--
-- Returns one of
--   {"NOROOM"}
--   {"READY", entryToken, deadlineMs}
--   {"PAUSED"}                                  (not queued: room paused)
--   {"WAITING", ticket, position, waiting, rate, new(0|1), target, admitted,
--    expired, departed, ttlMs}   (counters and entry window for the ETA)
-- Re-entering keeps the first ticket (ZADD NX); a user holding a live entry
-- token stays READY. The ticket comes from INCR here, never from app clocks.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'NOROOM'}
end
local user = ARGV[1]
local st = redis.call('HMGET', KEYS[6], 'rate', 'admitted', 'expired', 'left', 'abandoned')
local cfg = redis.call('HMGET', KEYS[1], 'target', 'ttl_ms')
local rate = st[1] or '0'
local target = cfg[1] or '0'
local admitted, expired = tonumber(st[2] or '0'), tonumber(st[3] or '0')
local departed = tonumber(st[4] or '0') + tonumber(st[5] or '0')
local ttl = tonumber(cfg[2] or '0')

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local rank = redis.call('ZRANK', KEYS[3], user)
if rank then
  redis.call('ZADD', KEYS[7], now, user)
  local ticket = redis.call('ZSCORE', KEYS[3], user)
  return {'WAITING', ticket, rank + 1, redis.call('ZCARD', KEYS[3]), rate, 0, target, admitted, expired, departed, ttl}
end

local token = redis.call('HGET', KEYS[5], user)
if token then
  local deadline = tonumber(redis.call('ZSCORE', KEYS[4], user) or '0')
  if deadline > now then
    return {'READY', token, deadline}
  end
  -- The entry window ended but the admission tick has not pruned it yet.
  redis.call('HDEL', KEYS[5], user)
  redis.call('ZREM', KEYS[4], user)
end

if redis.call('HGET', KEYS[1], 'paused') == '1' then
  return {'PAUSED'}
end

local ticket = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[3], 'NX', ticket, user)
redis.call('ZADD', KEYS[7], now, user)
redis.call('HINCRBY', KEYS[6], 'entered', 1)
rank = redis.call('ZRANK', KEYS[3], user)
return {'WAITING', ticket, rank + 1, redis.call('ZCARD', KEYS[3]), rate, 1, target, admitted, expired, departed, ttl}
