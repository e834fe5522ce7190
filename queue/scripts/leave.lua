-- leave: a user gives up their place (waiting) or their entry window (READY).
--
-- KEYS[1] queue   ZSET  member = user id, score = ticket number
-- KEYS[2] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[3] tokens  HASH  user id -> entry token
-- KEYS[4] stats   HASH  counters
-- ARGV[1] user id
--
-- Returns {wasWaiting(0|1), ticket or 0, slotFreed(0|1)}. An order already in
-- flight keeps its slot until it finishes.
local ticket = redis.call('ZSCORE', KEYS[1], ARGV[1])
local waiting = redis.call('ZREM', KEYS[1], ARGV[1])
local freed = 0
if redis.call('HDEL', KEYS[3], ARGV[1]) == 1 then
  freed = redis.call('ZREM', KEYS[2], ARGV[1])
end
if waiting == 1 then
  redis.call('HINCRBY', KEYS[4], 'left', 1)
end
return {waiting, ticket or 0, freed}
