-- status: where a user stands in a room, read in one step on the primary.
--
-- KEYS[1] queue   ZSET  member = user id, score = ticket number
-- KEYS[2] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[3] tokens  HASH  user id -> entry token
-- KEYS[4] stats   HASH  measured admission rate
-- KEYS[5] cfg     HASH  room configuration (target)
-- ARGV[1] user id
--
-- Returns one of
--   {"WAITING", ticket, position, waiting, rate, target, admitted, expired,
--    departed, ttlMs}   (counters and entry window for the ETA)
--   {"READY", entryToken, deadlineMs}
--   {"NONE"}   neither waiting nor holding a live entry token
-- Admission pops a user and stores their token in one script, so between two
-- status reads a user moves from WAITING to READY with no gap in between.
local user = ARGV[1]
local rank = redis.call('ZRANK', KEYS[1], user)
if rank then
  local st = redis.call('HMGET', KEYS[4], 'rate', 'admitted', 'expired', 'left', 'abandoned')
  local cfg = redis.call('HMGET', KEYS[5], 'target', 'ttl_ms')
  return {'WAITING', redis.call('ZSCORE', KEYS[1], user), rank + 1,
          redis.call('ZCARD', KEYS[1]), st[1] or '0', cfg[1] or '0',
          tonumber(st[2] or '0'), tonumber(st[3] or '0'),
          tonumber(st[4] or '0') + tonumber(st[5] or '0'), tonumber(cfg[2] or '0')}
end
local token = redis.call('HGET', KEYS[3], user)
if token then
  local deadline = tonumber(redis.call('ZSCORE', KEYS[2], user) or '0')
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if deadline > now then
    return {'READY', token, deadline}
  end
end
return {'NONE'}
