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
--   {"WAITING", ticket, position, waiting, rate, target}
--   {"READY", entryToken, deadlineMs}
--   {"NONE"}   neither waiting nor holding a live entry token
-- Admission pops a user and stores their token in one script, so between two
-- status reads a user moves from WAITING to READY with no gap in between.
local user = ARGV[1]
local rank = redis.call('ZRANK', KEYS[1], user)
if rank then
  return {'WAITING', redis.call('ZSCORE', KEYS[1], user), rank + 1,
          redis.call('ZCARD', KEYS[1]), redis.call('HGET', KEYS[4], 'rate') or '0',
          redis.call('HGET', KEYS[5], 'target') or '0'}
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
