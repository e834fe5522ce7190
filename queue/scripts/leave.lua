-- leave: a user gives up their place (waiting) or their entry window (READY).
--
-- KEYS[1] queue   ZSET  member = user id, score = ticket number
-- KEYS[2] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[3] tokens  HASH  user id -> entry token
-- KEYS[4] stats   HASH  counters, event sequence
-- KEYS[5] gone    ZSET  tickets of waiting users who left (score = ticket)
-- KEYS[6] seen    ZSET  member = waiting user id, score = expected back by (ms)
-- KEYS[7] prequeue ZSET member = user id, score = arrival number
-- KEYS[8] idle    ZSET  users dropped as idle, score = when (ms)
-- KEYS[9] session HASH  the user's gateway session (see hold.lua): leaving
--         ends it and frees its slot
-- KEYS[10] cfg    HASH  prequeue_parts: read when nothing was given up here
--         (the user may wait in a part of a sharded pre-queue)
-- KEYS[11] back   ZSET  passed-over users seen again (admit.lua)
-- ARGV[1] user id
-- ARGV[2] pub/sub channel of the room
-- ARGV[3] room name (goes into the event)
--
-- Returns {wasWaiting(0|1), ticket or 0, slotFreed(0|1), idle(0|1), parts};
-- parts: the room's prequeue_parts when nothing was given up (0 unset or
-- otherwise), so the caller asks the user's part only then; idle:
-- there was nothing to give up because the admission run had dropped the
-- user as idle (the drop stays remembered). A user leaving the
-- pre-queue has no ticket yet (0) and no event is published. An order already in
-- flight keeps its slot until it finishes; a gateway session does not. A
-- waiting user's ticket goes into
-- the gone set and one event {room, ev, left, waiting, serving, ts} is
-- published, so every instance can keep positions exact without asking Redis
-- per connection (see stream/doc.go).
local ticket = redis.call('ZSCORE', KEYS[1], ARGV[1])
local waiting = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('ZREM', KEYS[11], ARGV[1])
local pre = redis.call('ZREM', KEYS[7], ARGV[1])
if pre == 1 then
  redis.call('HINCRBY', KEYS[4], 'left', 1)
end
local freed = 0
local hadToken = redis.call('HDEL', KEYS[3], ARGV[1])
local hadSession = redis.call('DEL', KEYS[9])
if hadToken == 1 or hadSession == 1 then
  freed = redis.call('ZREM', KEYS[2], ARGV[1])
end
local idle = 0
if waiting == 0 and pre == 0 and hadToken == 0 and hadSession == 0 and redis.call('ZSCORE', KEYS[8], ARGV[1]) then
  idle = 1
end
if waiting == 1 then
  redis.call('HINCRBY', KEYS[4], 'left', 1)
  -- a user the admission had passed over (ticket at or below the highest
  -- admitted) is counted by the estimator once, as passed (admit.lua)
  if tonumber(ticket) <= tonumber(redis.call('HGET', KEYS[4], 'top') or '0') then
    redis.call('HINCRBY', KEYS[4], 'passed_gone', 1)
  end
  redis.call('ZADD', KEYS[5], ticket, ticket)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local ev = redis.call('HINCRBY', KEYS[4], 'ev', 1)
  local serving = tonumber(redis.call('HGET', KEYS[4], 'serving') or '0')
  redis.call('PUBLISH', ARGV[2], cjson.encode({room = ARGV[3], ev = ev, ts = now,
    left = {tonumber(ticket)}, waiting = redis.call('ZCARD', KEYS[1]), serving = serving}))
end
local parts = 0
if waiting == 0 and pre == 0 and freed == 0 then
  parts = tonumber(redis.call('HGET', KEYS[10], 'prequeue_parts') or '0') or 0
end
return {math.max(waiting, pre), ticket or 0, freed, idle, parts}
