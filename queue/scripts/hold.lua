-- hold: keep a gateway session's active slot (a consumed entry token in
-- pass mode "session") while its visitor is active, up to its maximum, and
-- pace the session's requests.
--
-- KEYS[1] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[2] tokens  HASH  user id -> entry token
-- KEYS[3] session HASH  id: the user's current session (set by consume);
--         net: the client network it is bound to ("" none); tat: the
--         rate's theoretical arrival time (GCRA, ms). Expires with the slot.
-- ARGV[1] user id
-- ARGV[2] idle allowance in ms: the deadline moves to now + this
-- ARGV[3] the session's end (ms, absolute): the deadline never passes it
-- ARGV[4] the session id presented (its cookie's)
-- ARGV[5] the request's client network ("": not checked)
-- ARGV[6] the rate's emission interval in ms (1000 / requests a second;
--         0: no rate)
-- ARGV[7] the rate's burst: requests allowed at once after a quiet spell
--
-- Returns {1, deadlineMs} while the session holds its slot; {0} when it
-- does not: the slot was pruned or left, its deadline has passed, the
-- session's end has come, the session is not the user's current one, or
-- the user was admitted again (an unspent token: a new admission, not this
-- session's); {2, retryMs} when it holds but this request is over the
-- session's rate; {3} when the request comes from another network than
-- the session's. On 2 and 3 nothing is extended.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score == false or redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return {0}
end
local s = redis.call('HMGET', KEYS[3], 'id', 'net', 'tat')
if not s[1] or s[1] ~= ARGV[4] then
  return {0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(score)
local limit = tonumber(ARGV[3])
if deadline <= now or limit <= now then
  return {0}
end
if ARGV[5] ~= '' and s[2] and s[2] ~= '' and s[2] ~= ARGV[5] then
  return {3}
end
local interval = tonumber(ARGV[6])
if interval > 0 then
  local tat = math.max(tonumber(s[3] or '0') or 0, now) + interval
  local over = tat - now - interval * tonumber(ARGV[7])
  if over > 0 then
    return {2, over}
  end
  redis.call('HSET', KEYS[3], 'tat', tat)
end
-- Never shortened by activity; never past the session's end.
local want = math.max(deadline, now + tonumber(ARGV[2]))
if want > limit then
  want = limit
end
if want ~= deadline then
  redis.call('ZADD', KEYS[1], 'XX', want, ARGV[1])
end
redis.call('PEXPIREAT', KEYS[3], want)
return {1, want}
