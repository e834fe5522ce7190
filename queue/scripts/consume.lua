-- consume: validate and spend a user's entry token in one step
-- (compare-then-delete; never GETDEL, which would let a wrong token delete
-- someone's valid one).
--
-- KEYS[1] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[2] tokens  HASH  user id -> entry token
-- ARGV[1] user id (the token is bound to this user)
-- ARGV[2] entry token presented
-- ARGV[3] in-flight allowance in ms: the slot stays active until the order
--         finishes (release) or this much time passes (pruned by admit)
--
-- Returns {1, deadlineMs} when consumed (deadlineMs: the entry window's end,
-- kept so restore can give the token back), {0} otherwise.
local token = redis.call('HGET', KEYS[2], ARGV[1])
if not token or token ~= ARGV[2] then
  return {0}
end
local deadline = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]) or '0')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if deadline <= now then
  return {0}
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])
return {1, deadline}
