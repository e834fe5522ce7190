-- claim: take the current second (Redis clock) of a room's history, once
-- across every instance: the caller that gets it records the room's point
-- for that second (append.lua); the others do nothing.
--
-- KEYS[1] meta  HASH  claimed, appended (Unix s), admitted, seq, origin
-- ARGV[1] lifetime of the history's keys (s)
--
-- Returns the second claimed (Unix s), or 0 when a caller has claimed this
-- second, or a later one, already.
local t = redis.call('TIME')
local sec = tonumber(t[1])
if tonumber(redis.call('HGET', KEYS[1], 'claimed') or '0') >= sec then
  return 0
end
redis.call('HSET', KEYS[1], 'claimed', t[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return sec
