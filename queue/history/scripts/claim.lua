-- claim: take the current second (Redis clock) of a room's history, once
-- across every instance: the caller that gets it records the room's point
-- for that second (append.lua); the others do nothing.
--
-- KEYS[1] meta  HASH  claimed, appended (Unix s), admitted, seq, origin
-- KEYS[2] cfg   HASH  the room's configuration: there while the room is
-- ARGV[1] lifetime of the history's keys (s)
--
-- Returns the second claimed (Unix s), 0 when a caller has claimed this
-- second, or a later one, already, or -1 when the room is gone (deleted
-- since the caller listed it: its history is not made again).
if redis.call('EXISTS', KEYS[2]) == 0 then
  return -1
end
local t = redis.call('TIME')
local sec = tonumber(t[1])
if tonumber(redis.call('HGET', KEYS[1], 'claimed') or '0') >= sec then
  return 0
end
redis.call('HSET', KEYS[1], 'claimed', t[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return sec
