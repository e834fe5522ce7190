-- open: at a scheduled opening, the pre-queue becomes the queue, in one
-- step. Idempotent and safe to run from any number of instances at once:
-- the first run moves everyone and empties the pre-queue, later runs find
-- nothing to do.
--
-- KEYS[1] cfg      HASH  method, opens_at (ms, Redis clock)
-- KEYS[2] seq      STRING ticket counter
-- KEYS[3] queue    ZSET  member = user id, score = ticket number
-- KEYS[4] prequeue ZSET  member = user id, score = arrival number
-- KEYS[5] stats    HASH  serving, ev, sched, late_from, shuffle_seed, opened_ms
-- KEYS[6] seen     ZSET  member = waiting user id, score = last seen (ms)
-- ARGV[1] pub/sub channel of the room
-- ARGV[2] room name (goes into the event)
-- ARGV[3] shuffle seed (hex, generated in Go; used when the method is random)
--
-- Order: those who arrived before the opening time (pre-queue score below
-- late_from) come first, shuffled when the method is random, else in
-- arrival order; those who arrived at or after it (before this run) follow
-- in arrival order. Each gets a fresh ticket from the room's counter, in
-- that order, so tickets stay contiguous and position = ticket - serving -
-- departed below (stream/doc.go). ONE event {kind="open"} is published.
--
-- The shuffle is Fisher-Yates driven by SHA-1 in counter mode: for k = n
-- down to 2, u = the first 48 bits of sha1(seed .. ":" .. k) (with ":" ..
-- attempt appended on the rare rejection that keeps the draw unbiased), j =
-- u mod k + 1, swap items k and j. queue.Permutation reproduces it.
--
-- Returns {moved, shuffled, seed, waiting, sched}; moved = -1: no such
-- room; moved = 0: nothing to do (not yet time, or already opened).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1, 0, '', 0, 0}
end
local cfg = redis.call('HMGET', KEYS[1], 'method', 'opens_at')
local method = cfg[1] or 'fifo'
local opensAt = tonumber(cfg[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if (opensAt and now < opensAt) or redis.call('ZCARD', KEYS[4]) == 0 then
  return {0, 0, '', 0, 0}
end

local all = redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')
local lateFrom = tonumber(redis.call('HGET', KEYS[5], 'late_from'))
local early, late = {}, {}
for i = 1, #all, 2 do
  if lateFrom and tonumber(all[i + 1]) >= lateFrom then
    late[#late + 1] = all[i]
  else
    early[#early + 1] = all[i]
  end
end

local seed = ''
local shuffled = 0
if method == 'random' then
  seed = ARGV[3]
  shuffled = #early
  local SPAN = 281474976710656 -- 2^48
  local function draw(k)
    local limit = SPAN - SPAN % k
    local attempt = 0
    while true do
      local input = seed .. ':' .. k
      if attempt > 0 then input = input .. ':' .. attempt end
      local h = redis.sha1hex(input)
      local u = tonumber(string.sub(h, 1, 6), 16) * 16777216 + tonumber(string.sub(h, 7, 12), 16)
      if u < limit then return u % k + 1 end
      attempt = attempt + 1
    end
  end
  for k = #early, 2, -1 do
    local j = draw(k)
    early[k], early[j] = early[j], early[k]
  end
end

local ticket = tonumber(redis.call('GET', KEYS[2]) or '0')
local moved = 0
local function place(user)
  if not redis.call('ZSCORE', KEYS[3], user) then
    ticket = ticket + 1
    moved = moved + 1
    redis.call('ZADD', KEYS[3], ticket, user)
    redis.call('ZADD', KEYS[6], now, user)
  end
end
for i = 1, #early do place(early[i]) end
for i = 1, #late do place(late[i]) end
redis.call('SET', KEYS[2], ticket)
redis.call('DEL', KEYS[4])
redis.call('HDEL', KEYS[5], 'late_from')
if method == 'random' then
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
return {moved, shuffled, seed, waiting, sched}
