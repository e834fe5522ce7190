-- restore: give a consumed entry token back after a failure (database
-- unreachable, timeout; in gateway mode an origin's 5xx) so the user can
-- retry the same order.
--
-- KEYS[1] active   ZSET   member = user id, score = deadline (ms, Redis clock)
-- KEYS[2] tokens   HASH   user id -> entry token
-- KEYS[3] restores STRING restores of this token so far (expires with the
--         token's entry window); touched only when ARGV[5] > 0
-- ARGV[1] user id
-- ARGV[2] entry token
-- ARGV[3] original entry-window deadline (ms)
-- ARGV[4] grace in ms: the window is extended to at least now + grace, so a
--         failure near the window's end still leaves time to retry; 0: the
--         window is never extended (a token whose window is over is not
--         restored)
-- ARGV[5] the most restores of one token (0: no bound)
--
-- Returns 1 when restored; 0 when the slot is gone (pruned, or the user was
-- admitted again with a new token): the user then re-enters; -1 when the
-- window is over (grace 0); -2 when the token was restored ARGV[5] times
-- already. On -1 and -2 nothing changes: the caller releases the slot.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false then
  return 0
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(ARGV[3])
local grace = tonumber(ARGV[4])
if grace > 0 then
  if deadline < now + grace then
    deadline = now + grace
  end
elseif deadline <= now then
  return -1
end
local most = tonumber(ARGV[5])
if most > 0 then
  local n = redis.call('INCR', KEYS[3])
  redis.call('PEXPIREAT', KEYS[3], deadline)
  if n > most then
    return -2
  end
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], 'XX', deadline, ARGV[1])
return 1
