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
-- KEYS[7] stats   HASH  event sequence, serving
-- KEYS[8] gone    ZSET  tickets of waiting users who left (score = ticket)
-- KEYS[9] seen    ZSET  member = waiting user id, score = expected back by (ms)
-- KEYS[10] back   ZSET  passed-over users seen again (admit.lua)
-- ARGV[1] user id
-- ARGV[2] fresh entry token
-- ARGV[3] pub/sub channel of the room
-- ARGV[4] room name (goes into the event)
--
-- A user granted from the queue leaves it like a departure: the ticket goes
-- into the gone set and one event {room, ev, left, waiting, serving, ts} is
-- published, so the places behind move up on every instance at once (the
-- user is not counted as left: they were served, not lost).
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
local ticket = redis.call('ZSCORE', KEYS[1], ARGV[1])
if ticket then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[9], ARGV[1])
  redis.call('ZREM', KEYS[10], ARGV[1])
  redis.call('ZADD', KEYS[8], ticket, ticket)
  local ev = redis.call('HINCRBY', KEYS[7], 'ev', 1)
  local serving = tonumber(redis.call('HGET', KEYS[7], 'serving') or '0')
  redis.call('PUBLISH', ARGV[3], cjson.encode({room = ARGV[4], ev = ev, ts = now,
    left = {tonumber(ticket)}, waiting = redis.call('ZCARD', KEYS[1]), serving = serving}))
end
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], deadline, ARGV[1])
return {'READY', ARGV[2], deadline}
