-- mappend: append one slice of a sharded pre-queue's merged order to the
-- room's queue (prequeue_merge.go: the append of slice j). Each user gets the next
-- ticket, in the order given; a user already waiting, or holding a live
-- entry token (admitted meanwhile by a grant), keeps what they have. The
-- slice is recorded with the parts' new cursors in the same step, so a
-- repeated append(j) finds the record past j and does nothing.
--
-- KEYS[1] seq STRING; KEYS[2] queue ZSET; KEYS[3] seen ZSET;
-- KEYS[4] tokens HASH; KEYS[5] active ZSET; KEYS[6] merge HASH;
-- KEYS[7] stats HASH (sched, ev, serving); KEYS[8] cfg HASH
-- ARGV[1] seed (the record's: a stale caller of another opening does
-- nothing); ARGV[2] j; ARGV[3] the cursors after the slice (csv);
-- ARGV[4] grace in ms; ARGV[5] pub/sub channel; ARGV[6] room name;
-- ARGV[7..] the slice's users in ticket order
--
-- The first slice publishes an open event (kind "open", the schedule
-- number bumped): pre-queued streams re-read their status, and the users
-- moved learn WAITING as admission starts.
--
-- Returns {appended, moved, slice}:
--   1 appended: 1 when this call appended slice j, 0 for a stale caller
--     (the record is of another opening, or already past j)
--   2 moved: the users of the slice put in the queue with a fresh ticket
--     (0 for a stale caller)
--   3 slice: the slices appended so far, as the record says after the call
local rec = redis.call('HMGET', KEYS[6], 'state', 'seed', 'slice')
local j = tonumber(ARGV[2])
if rec[1] ~= 'moving' or rec[2] ~= ARGV[1] or tonumber(rec[3]) ~= j then
  return {0, 0, tonumber(rec[3] or '0')}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local grace = tonumber(ARGV[4]) or 0
local ticket = tonumber(redis.call('GET', KEYS[1]) or '0')
local moved = 0
for i = 7, #ARGV do
  local user = ARGV[i]
  local held = redis.call('ZSCORE', KEYS[2], user)
  if not held and redis.call('HEXISTS', KEYS[4], user) == 1 then
    held = tonumber(redis.call('ZSCORE', KEYS[5], user) or '0') > now
  end
  if not held then
    ticket = ticket + 1
    moved = moved + 1
    redis.call('ZADD', KEYS[2], ticket, user)
    redis.call('ZADD', KEYS[3], now + grace, user)
  end
end
redis.call('SET', KEYS[1], ticket)
redis.call('HSET', KEYS[6], 'slice', j + 1, 'cursors', ARGV[3])
local total = redis.call('HINCRBY', KEYS[6], 'moved', moved)
-- The parts count nobody in the room's figures: entered counts them here.
redis.call('HINCRBY', KEYS[7], 'entered', moved)
if j == 0 then
  local sched = redis.call('HINCRBY', KEYS[7], 'sched', 1)
  redis.call('PUBLISH', ARGV[5], cjson.encode({room = ARGV[6], kind = 'open', ts = now,
    ev = redis.call('HINCRBY', KEYS[7], 'ev', 1), sched = sched, waiting = redis.call('ZCARD', KEYS[2]),
    opened = total, serving = tonumber(redis.call('HGET', KEYS[7], 'serving') or '0')}))
end
return {1, moved, j + 1}
