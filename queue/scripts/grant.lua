-- grant: admit one user at once, outside the queue's order and capacity
-- (the operator bypass, for staff testing a live sale; audited by the
-- caller). An existing live entry token is kept.
--
-- KEYS[1] queue   ZSET  member = user id, score = ticket number
-- KEYS[2] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[3] tokens  HASH  user id -> entry token
-- KEYS[4] cfg     HASH  ttl_ms (exists iff the room exists)
-- KEYS[5] prequeue ZSET member = user id, score = arrival number
-- KEYS[6] idle    ZSET  users dropped as idle (a grant forgets the drop)
-- ARGV[1] user id
-- ARGV[2] fresh entry token
--
-- Returns {"NOROOM"} or {"READY", entryToken, deadlineMs}.
if redis.call('EXISTS', KEYS[4]) == 0 then
  return {'NOROOM'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local token = redis.call('HGET', KEYS[3], ARGV[1])
local deadline = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]) or '0')
if token and deadline > now then
  return {'READY', token, deadline}
end
deadline = now + tonumber(redis.call('HGET', KEYS[4], 'ttl_ms') or '120000')
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], deadline, ARGV[1])
return {'READY', ARGV[2], deadline}
