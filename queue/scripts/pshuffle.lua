-- pshuffle: shuffle one sealed part of a sharded pre-queue, one bounded
-- slice per run, as open.lua shuffles a room's pre-queue: each user gets
-- the place -2^48 + the first 48 bits of sha1(seed .. ":" .. user), so the
-- part's order by score (ties by user id) is queue.Shuffle(seed, users).
--
-- KEYS[1] prequeue ZSET  the part's arrivals (score > 0: not yet shuffled)
-- KEYS[2] state    HASH  merging, shuffle_seed
-- ARGV[1] the part's seed (derived from the opening's recorded seed)
-- ARGV[2] slice: the most users one run places
--
-- Returns how many users remain to be shuffled, or -1 when the part is
-- not being merged or was shuffled with another seed (a stale caller).
local st = redis.call('HMGET', KEYS[2], 'merging', 'shuffle_seed')
if st[1] ~= '1' or (st[2] and st[2] ~= ARGV[1]) then
  return -1
end
if not st[2] then
  redis.call('HSET', KEYS[2], 'shuffle_seed', ARGV[1])
end
local todo = redis.call('ZRANGEBYSCORE', KEYS[1], 0, '+inf', 'LIMIT', 0, tonumber(ARGV[2]))
local SPAN = 281474976710656 -- 2^48
for i = 1, #todo do
  local h = redis.sha1hex(ARGV[1] .. ':' .. todo[i])
  local u = tonumber(string.sub(h, 1, 6), 16) * 16777216 + tonumber(string.sub(h, 7, 12), 16)
  redis.call('ZADD', KEYS[1], 'XX', u - SPAN, todo[i])
end
return redis.call('ZCOUNT', KEYS[1], 0, '+inf')
