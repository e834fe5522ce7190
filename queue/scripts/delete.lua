-- delete: remove a room in one step — its configuration, queue,
-- pre-queue, admissions, entry tokens, counters, and the keys other
-- packages keep under its hash tag — unless someone is in it and the
-- delete is not forced. An enter runs wholly before or wholly after it:
-- before, the entrant makes the room not empty (refused, or removed with
-- the rest and told, when forced); after, it finds no room
-- (room_not_found). Nobody is lost without a word.
--
-- KEYS[1] cfg      HASH  the room's configuration (exists iff the room does)
-- KEYS[2] queue    ZSET  waiting users
-- KEYS[3] prequeue ZSET  users waiting for the opening
-- KEYS[4] active   ZSET  admitted users (and orders in flight)
-- KEYS[5] stats    HASH  serving, ev, sched
-- KEYS[6] seq      STRING the last ticket issued
-- KEYS[7..] the room's other keys, removed with it
-- ARGV[1] 1: forced, remove whoever is in the room; 0: refuse when anyone is
-- ARGV[2] pub/sub channel of the room
-- ARGV[3] room name (goes into the event)
--
-- Returns {status, waiting, prequeued, admitted}: status 1 deleted, 0
-- refused (someone is in the room and ARGV[1] is 0; nothing changed), -1
-- no such room (nothing changed). The counts are the room's before the
-- call. A forced delete of a room with anyone in it publishes one event
-- {room, ev, ts, serving, waiting = 0, sched} whose serving is the last
-- ticket and whose sched is one more: every instance's streams of the room
-- then re-read their users' standing, find none and end with "gone".
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1, 0, 0, 0}
end
local waiting = redis.call('ZCARD', KEYS[2])
local pre = redis.call('ZCARD', KEYS[3])
local admitted = redis.call('ZCARD', KEYS[4])
local anyone = waiting + pre + admitted > 0
if anyone and ARGV[1] ~= '1' then
  return {0, waiting, pre, admitted}
end
if anyone then
  local st = redis.call('HMGET', KEYS[5], 'serving', 'ev', 'sched')
  local last = tonumber(redis.call('GET', KEYS[6]) or '0')
  local tail = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if tail[2] then
    last = math.max(last, tonumber(tail[2]))
  end
  last = math.max(last, tonumber(st[1] or '0'))
  local t = redis.call('TIME')
  redis.call('PUBLISH', ARGV[2], cjson.encode({room = ARGV[3], ev = tonumber(st[2] or '0') + 1,
    ts = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
    serving = last, waiting = 0, sched = tonumber(st[3] or '0') + 1}))
end
redis.call('UNLINK', unpack(KEYS))
return {1, waiting, pre, admitted}
