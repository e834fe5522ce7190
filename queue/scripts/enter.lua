-- enter: put a user in a room's queue (or its pre-queue before a scheduled
-- opening), or report where they already are.
--
-- KEYS[1] cfg      HASH  room configuration (exists iff the room exists):
--                        target, paused, method, opens_at (ms), message
-- KEYS[2] seq      STRING ticket counter
-- KEYS[3] queue    ZSET  member = user id, score = ticket number
-- KEYS[4] active   ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[5] tokens   HASH  user id -> entry token
-- KEYS[6] stats    HASH  measured admission rate, counters, preseq, late_from
-- KEYS[7] seen     ZSET  member = waiting user id, score = expected back
--                        by (ms, Redis clock; see touch.lua)
-- KEYS[8] prequeue ZSET  member = user id, score = arrival number (preseq)
-- KEYS[9] idle     ZSET  users dropped as idle (entering forgets the drop)
-- KEYS[10] back    ZSET  passed-over users seen again (admit.lua): a
--                        passed-over user entering again (a reload) joins it
-- ARGV[1] user id
-- ARGV[2] a fresh entry token, used only when the method is passthrough
-- ARGV[3] pub/sub channel of the room
-- ARGV[4] room name (goes into the event)
-- ARGV[5] grace in ms: a user entering (again: a reload) is expected back
--         by now + grace, before their first poll or stream is told
-- ARGV[6] '1': a part of the room's sharded pre-queue refused the user
--         (penter.lua said ROOM): a new user joins the room's own
--         pre-queue instead of being sent to a part (optional)
--
-- Returns one of
--   {"GUARD", refused}   (not entered: refused is the table before_enter
--                     returned, see below)
--   {"NOROOM"}
--   {"REJECT"}                                  (not queued: method reject)
--   {"READY", entryToken, deadlineMs, new(0|1)}
--   {"WAITING", ticket, position, waiting, rate, target, closed(0|1), new(0|1),
--    paused(0|1), message}
--   {"PREQUEUE", position, waiting, opensAtMs, sched, closed(0|1), new(0|1), nowMs,
--    paused(0|1), message}
--   {"PART", parts, occupied}  (not queued: the room's pre-queue is
--                     sharded, cfg prequeue_parts > 1, and the user is new
--                     to the room: the caller enters them in their part,
--                     prequeue_parts.go; occupied: the queue or the active set holds
--                     anyone, so enters must keep asking the room first)
--     paused: the room is paused: it admits nobody, but takes arrivals
--     into the line (or pre-queue) like a running room, in the same FIFO
--     order, and every waiting user keeps the place; method reject is the
--     state that refuses arrivals (REJECT);
--     message: the operator's message to waiting users ('' when none).
--     position is the arrival-order place (method fifo) or 0 (random: not
--     decided before the opening); waiting counts queue and pre-queue.
-- Re-entering keeps the first place (ZADD NX); a user holding a live entry
-- token stays READY. The ticket comes from INCR here, never from app clocks.
-- A user arriving while the opening time is in the future, or while the
-- pre-queue still waits for its opening run, joins the pre-queue; the first
-- arrival at or after the opening time is recorded (late_from) so the
-- opening shuffles only those who came before it.
--
-- The first arrival in an empty queue (or an empty pre-queue) publishes one
-- event: the room had no work, so no admission run was looking at it, and
-- this wakes the instance that runs it (see the admission loop). Every
-- later enter publishes nothing: the room's admission runs, every tick
-- while anyone waits, publish the new total.
--
-- before_enter(fresh), defined ahead of this file (guard.go), runs first:
-- nil to go on, or a table to reply {'GUARD', table} instead. fresh says
-- whether the user holds no place yet (a new place, or a refusal).
local user = ARGV[1]
-- Where the user is, read once: the line, else the pre-queue, else an
-- entry token. The guard writes only its own keys, so these stand for the
-- rest of the script.
local rank = redis.call('ZRANK', KEYS[3], user)
local prank = false
if not rank then
  prank = redis.call('ZRANK', KEYS[8], user)
end
local token = false
if not rank and not prank then
  token = redis.call('HGET', KEYS[5], user)
end
do
  local held = rank or prank
  if not held and token then
    local t = redis.call('TIME')
    local deadline = tonumber(redis.call('ZSCORE', KEYS[4], user) or '0')
    held = deadline > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  local refused = before_enter(not held)
  if refused then
    return {'GUARD', refused}
  end
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'NOROOM'}
end
local cfg = redis.call('HMGET', KEYS[1], 'target', 'paused', 'method', 'opens_at', 'message', 'ttl_ms', 'prequeue_parts')
local target = cfg[1] or '0'
local paused = cfg[2] == '1' and 1 or 0
local message = cfg[5] or ''
local method = cfg[3] or 'fifo'
local opensAt = tonumber(cfg[4])
local closed = method == 'reject' and 1 or 0
local rate = redis.call('HGET', KEYS[6], 'rate') or '0'

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local grace = tonumber(ARGV[5]) or 0

-- wake publishes the event of a first arrival: {room, ev, ts, serving, waiting}.
local function wake(now)
  redis.call('PUBLISH', ARGV[3], cjson.encode({room = ARGV[4], ts = now,
    ev = redis.call('HINCRBY', KEYS[6], 'ev', 1),
    serving = tonumber(redis.call('HGET', KEYS[6], 'serving') or '0'),
    waiting = redis.call('ZCARD', KEYS[3])}))
end

local function prequeued(rank, new)
  local pos = 0
  if method ~= 'random' then
    pos = redis.call('ZCARD', KEYS[3]) + rank + 1
  end
  return {'PREQUEUE', pos, redis.call('ZCARD', KEYS[3]) + redis.call('ZCARD', KEYS[8]),
          opensAt or 0, tonumber(redis.call('HGET', KEYS[6], 'sched') or '0'), closed, new, now,
          paused, message}
end

if rank then
  redis.call('ZADD', KEYS[7], 'GT', now + grace, user)
  local ticket = redis.call('ZSCORE', KEYS[3], user)
  if tonumber(ticket) <= tonumber(redis.call('HGET', KEYS[6], 'scan') or '0') then
    redis.call('ZADD', KEYS[10], 'NX', ticket, user)
  end
  return {'WAITING', ticket, rank + 1, redis.call('ZCARD', KEYS[3]), rate, target, closed, 0, paused, message}
end
if prank then
  return prequeued(prank, 0)
end

if token then
  local deadline = tonumber(redis.call('ZSCORE', KEYS[4], user) or '0')
  if deadline > now then
    return {'READY', token, deadline, 0}
  end
  -- The entry window ended but the admission tick has not pruned it yet.
  redis.call('HDEL', KEYS[5], user)
  redis.call('ZREM', KEYS[4], user)
end

if closed == 1 then
  return {'REJECT'}
end
-- From here the user gets a new place: an earlier drop for idleness no
-- longer explains anything.
redis.call('ZREM', KEYS[9], user)

local scheduled = opensAt and now < opensAt
-- A sharded pre-queue (prequeue_merge.go): before the opening a new user goes to
-- their part; from the opening until the merge is done they join the
-- room's own pre-queue, behind everyone in the parts, unless still in
-- their part (the caller asks it first).
local parts = tonumber(cfg[7]) or 1
local merging = parts > 1 and redis.call('HGET', KEYS[6], 'pm_state')
if (scheduled or merging) and parts > 1 and ARGV[6] ~= '1' then
  return {'PART', parts, redis.call('EXISTS', KEYS[3], KEYS[4])}
end
if scheduled or merging or redis.call('ZCARD', KEYS[8]) > 0 then
  local arrival = redis.call('HINCRBY', KEYS[6], 'preseq', 1)
  if not scheduled then
    redis.call('HSETNX', KEYS[6], 'late_from', arrival)
  end
  redis.call('ZADD', KEYS[8], 'NX', arrival, user)
  redis.call('HINCRBY', KEYS[6], 'entered', 1)
  rank = redis.call('ZRANK', KEYS[8], user)
  if rank == 0 then
    wake(now)
  end
  return prequeued(rank, 1)
end

if method == 'passthrough' and paused == 0 then
  -- No queue: admitted at once, outside targetActive (see README). A
  -- paused passthrough room queues the arrival: its first run after the
  -- pause admits everyone waiting (admit.lua).
  local deadline = now + (tonumber(cfg[6]) or 120000)
  redis.call('HSET', KEYS[5], user, ARGV[2])
  redis.call('ZADD', KEYS[4], deadline, user)
  redis.call('HINCRBY', KEYS[6], 'entered', 1)
  redis.call('HINCRBY', KEYS[6], 'admitted', 1)
  return {'READY', ARGV[2], deadline, 1}
end

local ticket = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[3], 'NX', ticket, user)
redis.call('ZADD', KEYS[7], now + grace, user)
redis.call('HINCRBY', KEYS[6], 'entered', 1)
-- Every ticket in the line came from seq (here, open.lua, mappend.lua,
-- mfinish.lua), so the new one is the line's last: its rank is the count.
local waiting = redis.call('ZCARD', KEYS[3])
if waiting == 1 then
  wake(now)
end
return {'WAITING', ticket, waiting, waiting, rate, target, 0, 1, paused, message}
