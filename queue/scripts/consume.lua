-- consume: validate and spend a user's entry token in one step
-- (compare-then-delete; never GETDEL, which would let a wrong token delete
-- someone's valid one).
--
-- KEYS[1] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[2] tokens  HASH  user id -> entry token
-- KEYS[3] session HASH  the user's gateway session (see hold.lua): id, net,
--         tat; replaced by a new session or deleted, since a consumed token
--         is a new admission and ends any session of an older one
-- ARGV[1] user id (the token is bound to this user)
-- ARGV[2] entry token presented
-- ARGV[3] in-flight allowance in ms: the slot stays active until the order
--         finishes (release) or this much time passes (pruned by admit)
-- ARGV[4] the session this token opens ("" for none: an order, a once pass)
-- ARGV[5] the client network the session is bound to ("" for none)
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
redis.call('DEL', KEYS[3])
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[3], 'id', ARGV[4], 'net', ARGV[5])
  redis.call('PEXPIREAT', KEYS[3], now + tonumber(ARGV[3]))
end
return {1, deadline}
