-- schedule: change a room's queueing method and/or opening time, and tell
-- every instance in ONE event, so pushed statuses follow at once (a reject
-- room's waiting users see CLOSED; pre-queue users see the new time). Also
-- run with nothing to change (ARGV[3] '' and ARGV[4] '-') after the pause
-- or the operator's message changed, to tell the same way: the event
-- carries both, and waiting users' streams show them at once.
--
-- KEYS[1] cfg    HASH  method, opens_at (ms, Redis clock), paused, message
-- KEYS[2] stats  HASH  serving, ev, sched
-- KEYS[3] queue  ZSET  member = user id, score = ticket number
-- ARGV[1] pub/sub channel of the room
-- ARGV[2] room name (goes into the event)
-- ARGV[3] method: fifo | random | passthrough | reject, or "" to keep it
-- ARGV[4] opening time in Unix ms, "" to clear it, or "-" to keep it
--
-- Returns the room's new schedule number (sched), or -1 when the room does
-- not exist. Clearing the opening time (or setting one in the past) lets the
-- next admission run open the room.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'method', ARGV[3])
end
if ARGV[4] == '' then
  redis.call('HDEL', KEYS[1], 'opens_at')
elseif ARGV[4] ~= '-' then
  redis.call('HSET', KEYS[1], 'opens_at', ARGV[4])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local sched = redis.call('HINCRBY', KEYS[2], 'sched', 1)
redis.call('PUBLISH', ARGV[1], cjson.encode({room = ARGV[2], kind = 'config', ts = now,
  ev = redis.call('HINCRBY', KEYS[2], 'ev', 1), sched = sched,
  closed = redis.call('HGET', KEYS[1], 'method') == 'reject',
  paused = redis.call('HGET', KEYS[1], 'paused') == '1',
  message = redis.call('HGET', KEYS[1], 'message') or '',
  waiting = redis.call('ZCARD', KEYS[3]),
  serving = tonumber(redis.call('HGET', KEYS[2], 'serving') or '0')}))
return sched
