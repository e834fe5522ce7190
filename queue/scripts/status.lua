-- status: where a user stands in a room, read in one step on the primary.
--
-- KEYS[1] queue    ZSET  member = user id, score = ticket number
-- KEYS[2] active   ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[3] tokens   HASH  user id -> entry token
-- KEYS[4] stats    HASH  measured admission rate, sched
-- KEYS[5] cfg      HASH  room configuration (target, method, opens_at,
--                        paused, message)
-- KEYS[6] prequeue ZSET  member = user id, score = arrival number
-- KEYS[7] idle     ZSET  users dropped as idle, score = when (ms)
-- ARGV[1] user id
--
-- Returns one of (the same shapes as enter, with new = 0)
--   {"WAITING", ticket, position, waiting, rate, target, closed(0|1), 0,
--    paused(0|1), message}
--   {"PREQUEUE", position, waiting, opensAtMs, sched, closed(0|1), 0, nowMs,
--    paused(0|1), message}
--   {"READY", entryToken, deadlineMs, 0}
--   {"NONE"}   neither waiting nor holding a live entry token
--   {"NONE", "idle"}   the same, because the admission run dropped the user
--                      as idle (and they have not entered again since)
--   {"PARTS", parts, opensAtMs, sched, closed(0|1), nowMs, paused(0|1), message,
--    waiting, idle(0|1)}   not in the room's keys, whose pre-queue is
--                      sharded (cfg prequeue_parts > 1): the caller reads
--                      the user's part (prequeue_parts.go); waiting counts the
--                      room's queue and own pre-queue
-- Admission pops a user and stores their token in one script, and the
-- opening moves the pre-queue into the queue in one script, so between two
-- status reads a user moves PREQUEUE -> WAITING -> READY with no gap.
local user = ARGV[1]
local cfg = redis.call('HMGET', KEYS[5], 'target', 'method', 'opens_at', 'paused', 'message', 'prequeue_parts')
local closed = cfg[2] == 'reject' and 1 or 0
local paused = cfg[4] == '1' and 1 or 0
local message = cfg[5] or ''
local rank = redis.call('ZRANK', KEYS[1], user)
if rank then
  return {'WAITING', redis.call('ZSCORE', KEYS[1], user), rank + 1,
          redis.call('ZCARD', KEYS[1]), redis.call('HGET', KEYS[4], 'rate') or '0', cfg[1] or '0', closed, 0,
          paused, message}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
rank = redis.call('ZRANK', KEYS[6], user)
if rank then
  local pos = 0
  if cfg[2] ~= 'random' then
    pos = redis.call('ZCARD', KEYS[1]) + rank + 1
  end
  return {'PREQUEUE', pos, redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[6]),
          tonumber(cfg[3]) or 0, tonumber(redis.call('HGET', KEYS[4], 'sched') or '0'), closed, 0, now,
          paused, message}
end
local token = redis.call('HGET', KEYS[3], user)
if token then
  local deadline = tonumber(redis.call('ZSCORE', KEYS[2], user) or '0')
  if deadline > now then
    return {'READY', token, deadline, 0}
  end
end
local idle = redis.call('ZSCORE', KEYS[7], user)
local parts = tonumber(cfg[6]) or 1
-- once the opening of opens_at has been merged (opened_ms at or after it,
-- no merge under way) the parts hold nobody: arrivals since go to the
-- room's own pre-queue (enter.lua), so a user not found is nowhere, and
-- the read costs no round trip to the parts
local opensAt = tonumber(cfg[3])
local merged = false
if parts > 1 and opensAt and now >= opensAt then
  local pm = redis.call('HMGET', KEYS[4], 'opened_ms', 'pm_state')
  merged = not pm[2] and (tonumber(pm[1]) or 0) >= opensAt
end
if parts > 1 and not merged then
  return {'PARTS', parts, tonumber(cfg[3]) or 0, tonumber(redis.call('HGET', KEYS[4], 'sched') or '0'), closed, now,
          paused, message, redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[6]), idle and 1 or 0}
end
if idle then
  return {'NONE', 'idle'}
end
return {'NONE'}
