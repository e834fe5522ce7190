-- hold: keep a gateway session's active slot (a consumed entry token in
-- pass mode "session") while its visitor is active, up to its maximum.
--
-- KEYS[1] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[2] tokens  HASH  user id -> entry token
-- ARGV[1] user id
-- ARGV[2] idle allowance in ms: the deadline moves to now + this
-- ARGV[3] the session's end (ms, absolute): the deadline never passes it
--
-- Returns {1, deadlineMs} while the session holds its slot, {0} when it
-- does not: the slot was pruned or left, its deadline has passed, the
-- session's end has come, or the user was admitted again (an unspent
-- token: a new admission, not this session's).
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score == false or redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return {0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(score)
local limit = tonumber(ARGV[3])
if deadline <= now or limit <= now then
  return {0}
end
-- Never shortened by activity; never past the session's end.
local want = math.max(deadline, now + tonumber(ARGV[2]))
if want > limit then
  want = limit
end
if want ~= deadline then
  redis.call('ZADD', KEYS[1], 'XX', want, ARGV[1])
end
return {1, want}
