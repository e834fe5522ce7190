-- restore: give a consumed entry token back after an infrastructure failure
-- (database unreachable, timeout) so the user can retry the same order.
--
-- KEYS[1] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[2] tokens  HASH  user id -> entry token
-- ARGV[1] user id
-- ARGV[2] entry token
-- ARGV[3] original entry-window deadline (ms)
-- ARGV[4] grace in ms: the window is extended to at least now + grace, so a
--         failure near the window's end still leaves time to retry
--
-- Returns 1 when restored, 0 when the slot is gone (pruned, or the user was
-- admitted again with a new token): the user then re-enters.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false then
  return 0
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(ARGV[3])
if deadline < now + tonumber(ARGV[4]) then
  deadline = now + tonumber(ARGV[4])
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], 'XX', deadline, ARGV[1])
return 1
