-- mfinish: the end of merging a sharded pre-queue (prequeue_merge.go), once every
-- part is in the room's queue and committed. The room's own pre-queue
-- holds those who arrived after the parts were sealed (late arrivals):
-- they follow in arrival order (the room's counter, exact FIFO), one
-- bounded slice per run, as open.lua moves them; arrivals keep joining
-- it until the run that empties it finishes the opening.
--
-- KEYS[1] seq STRING; KEYS[2] queue ZSET; KEYS[3] prequeue ZSET;
-- KEYS[4] stats HASH; KEYS[5] seen ZSET; KEYS[6] merge HASH
-- ARGV[1] seed (the record's); ARGV[2] slice; ARGV[3] grace in ms;
-- ARGV[4] pub/sub channel; ARGV[5] room name; ARGV[6] parts
--
-- Returns {moved, shuffled, seed, waiting, sched, done}, as open.lua:
--   1 moved: every user the opening moved, when this run finished it (0
--     while late arrivals remain; -1 for a stale caller)
--   2 shuffled: the users of the parts shuffled (method random)
--   3 seed: the record's seed ('' for a stale caller; on the run that
--     finishes, '' for method fifo)
--   4 waiting: the queue's length after the opening (0 until it finishes)
--   5 sched: the room's schedule number after the opening (0 until then)
--   6 done: 0 a slice of late arrivals moved and more remain (or a stale
--     caller whose parts are not all appended); 1 this run finished the
--     opening (or a stale caller of another opening)
local rec = redis.call('HMGET', KEYS[6], 'state', 'seed', 'method', 'counts', 'cursors', 'n')
if rec[1] ~= 'moving' or rec[2] ~= ARGV[1] then
  return {-1, 0, '', 0, 0, 1}
end
local function sum(csv)
  local s = 0
  for x in string.gmatch(csv or '', '[^,]+') do
    s = s + tonumber(x)
  end
  return s
end
if sum(rec[5]) ~= sum(rec[4]) then
  return {-1, 0, '', 0, 0, 0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local grace = tonumber(ARGV[3]) or 0
local next = redis.call('ZRANGE', KEYS[3], 0, tonumber(ARGV[2]) - 1)
if #next > 0 then
  local ticket = tonumber(redis.call('GET', KEYS[1]) or '0')
  local moved = 0
  for i = 1, #next do
    if not redis.call('ZSCORE', KEYS[2], next[i]) then
      ticket = ticket + 1
      moved = moved + 1
      redis.call('ZADD', KEYS[2], ticket, next[i])
      redis.call('ZADD', KEYS[5], now + grace, next[i])
    end
  end
  redis.call('ZREM', KEYS[3], unpack(next))
  redis.call('SET', KEYS[1], ticket)
  redis.call('HINCRBY', KEYS[6], 'moved', moved)
  if redis.call('ZCARD', KEYS[3]) > 0 then
    return {0, 0, rec[2], 0, 0, 0}
  end
end
local moved = tonumber(redis.call('HGET', KEYS[6], 'moved') or '0')
local shuffled = 0
if rec[3] == 'random' and tonumber(rec[6]) > 0 then
  shuffled = tonumber(rec[6])
  redis.call('HSET', KEYS[4], 'shuffle_seed', rec[2], 'shuffled', shuffled, 'shuffle_parts', ARGV[6])
else
  redis.call('HDEL', KEYS[4], 'shuffle_seed', 'shuffled', 'shuffle_parts')
end
redis.call('DEL', KEYS[6])
redis.call('HDEL', KEYS[4], 'pm_state', 'late_from')
redis.call('HSET', KEYS[4], 'opened_ms', now)
local sched = redis.call('HINCRBY', KEYS[4], 'sched', 1)
local waiting = redis.call('ZCARD', KEYS[2])
redis.call('PUBLISH', ARGV[4], cjson.encode({room = ARGV[5], kind = 'open', ts = now,
  ev = redis.call('HINCRBY', KEYS[4], 'ev', 1), sched = sched, waiting = waiting,
  opened = moved, serving = tonumber(redis.call('HGET', KEYS[4], 'serving') or '0')}))
return {moved, shuffled, rec[3] == 'random' and rec[2] or '', waiting, sched, 1}
