-- open: at a scheduled opening, the pre-queue becomes the queue, one
-- bounded slice per run, so that opening a pre-queue of a million users
-- never holds Redis for more than one slice. Run it again until it reports
-- done; safe to run from any number of instances at once (each run does
-- the next slice; the run that empties the pre-queue finishes the opening,
-- later runs find nothing to do).
--
-- KEYS[1] cfg      HASH  method, opens_at (ms, Redis clock)
-- KEYS[2] seq      STRING ticket counter
-- KEYS[3] queue    ZSET  member = user id, score = ticket number
-- KEYS[4] prequeue ZSET  member = user id, score = arrival number (>= 1),
--                        or its shuffled place (< 0, method random)
-- KEYS[5] stats    HASH  serving, ev, sched, late_from, shuffle_seed, opened_ms,
--                        and while an opening is under way open_seed,
--                        open_moved, open_shuffled
-- KEYS[6] seen     ZSET  member = waiting user id, score = expected back
--                        by (ms, Redis clock; see touch.lua)
-- ARGV[1] pub/sub channel of the room
-- ARGV[2] room name (goes into the event)
-- ARGV[3] shuffle seed (hex, generated in Go; the first run of an opening
--         records it, later runs use the recorded one)
-- ARGV[4] slice: the most users one run shuffles or moves
-- ARGV[5] grace in ms: a user moved into the queue is expected back by
--         now + grace (see touch.lua)
--
-- Order: those who arrived before the opening time (arrival number below
-- late_from) come first, shuffled when the method is random, else in
-- arrival order; those who arrived at or after it follow in arrival order,
-- including those who arrive while the opening is under way (they join
-- the pre-queue, which is not empty until the last slice). Admission holds
-- while the pre-queue is not empty (admit.lua), and positions of users
-- still in the pre-queue count everyone moved before them, so a run that
-- has moved only part of the pre-queue tells nobody anything untrue.
--
-- The shuffle (method random) gives each early arrival the place
-- -2^48 + the first 48 bits of sha1(seed .. ":" .. user): sorting by it,
-- ties by user id, is a uniform random order for a seed nobody knows in
-- advance, and queue.Shuffle reproduces it from the seed and the users.
-- Every early arrival gets its place before anyone is moved.
--
-- Moving takes the pre-queue from its lowest score: each user gets the
-- next ticket from the room's counter, so tickets stay contiguous and
-- position = ticket - serving - departed below (stream/doc.go). The run
-- that empties the pre-queue publishes ONE event {kind="open"}.
--
-- Returns {moved, shuffled, seed, waiting, sched, done}:
--   1 moved: the users the opening moved into the queue, counted when it
--     finishes (0 while slices remain; -1: no such room)
--   2 shuffled: how many of them were shuffled (method random; the late
--     arrivals that follow in arrival order are not)
--   3 seed: the shuffle's seed (hex; '' for fifo and when nothing ran)
--   4 waiting: the queue's length after the opening (0 until it finishes)
--   5 sched: the room's schedule number after the opening (0 until then)
--   6 done: 0 a slice ran and more remain; 1 nothing to do (moved 0: not
--     yet time, or already opened) or this run finished the opening
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1, 0, '', 0, 0, 1}
end
local cfg = redis.call('HMGET', KEYS[1], 'method', 'opens_at')
local method = cfg[1] or 'fifo'
local opensAt = tonumber(cfg[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if (opensAt and now < opensAt) or redis.call('ZCARD', KEYS[4]) == 0 then
  return {0, 0, '', 0, 0, 1}
end
local slice = tonumber(ARGV[4])
local grace = tonumber(ARGV[5]) or 0
local st = redis.call('HMGET', KEYS[5], 'late_from', 'open_seed')

local seed = ''
if method == 'random' then
  seed = st[2] or ARGV[3]
  if not st[2] then
    redis.call('HSET', KEYS[5], 'open_seed', seed)
  end
  local upto = st[1] and ('(' .. st[1]) or '+inf'
  local todo = redis.call('ZRANGEBYSCORE', KEYS[4], 0, upto, 'LIMIT', 0, slice)
  if #todo > 0 then
    local SPAN = 281474976710656 -- 2^48
    for i = 1, #todo do
      local h = redis.sha1hex(seed .. ':' .. todo[i])
      local u = tonumber(string.sub(h, 1, 6), 16) * 16777216 + tonumber(string.sub(h, 7, 12), 16)
      redis.call('ZADD', KEYS[4], 'XX', u - SPAN, todo[i])
    end
    redis.call('HINCRBY', KEYS[5], 'open_shuffled', #todo)
    return {0, 0, seed, 0, 0, 0}
  end
end

local next = redis.call('ZRANGE', KEYS[4], 0, slice - 1)
local ticket = tonumber(redis.call('GET', KEYS[2]) or '0')
local moved = 0
for i = 1, #next do
  local user = next[i]
  if not redis.call('ZSCORE', KEYS[3], user) then
    ticket = ticket + 1
    moved = moved + 1
    redis.call('ZADD', KEYS[3], ticket, user)
    redis.call('ZADD', KEYS[6], now + grace, user)
  end
end
redis.call('ZREM', KEYS[4], unpack(next))
redis.call('SET', KEYS[2], ticket)
moved = redis.call('HINCRBY', KEYS[5], 'open_moved', moved)
if redis.call('ZCARD', KEYS[4]) > 0 then
  return {0, 0, seed, 0, 0, 0}
end

-- The seed is recorded if this opening shuffled anyone (even should the
-- method have changed while it was under way).
local done = redis.call('HMGET', KEYS[5], 'open_seed', 'open_shuffled')
seed = done[1] or ''
local shuffled = tonumber(done[2] or '0')
redis.call('HDEL', KEYS[5], 'late_from', 'open_seed', 'open_moved', 'open_shuffled', 'shuffle_parts')
if done[1] then
  redis.call('HSET', KEYS[5], 'shuffle_seed', seed, 'shuffled', shuffled)
else
  redis.call('HDEL', KEYS[5], 'shuffle_seed', 'shuffled')
end
redis.call('HSET', KEYS[5], 'opened_ms', now)
local sched = redis.call('HINCRBY', KEYS[5], 'sched', 1)
local waiting = redis.call('ZCARD', KEYS[3])
redis.call('PUBLISH', ARGV[1], cjson.encode({room = ARGV[2], kind = 'open', ts = now,
  ev = redis.call('HINCRBY', KEYS[5], 'ev', 1), sched = sched, waiting = waiting,
  opened = moved, serving = tonumber(redis.call('HGET', KEYS[5], 'serving') or '0')}))
return {moved, shuffled, seed, waiting, sched, 1}
