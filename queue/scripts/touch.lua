-- touch: mark waiting users as present (they polled or hold a stream), so
-- the admission run does not count them as having abandoned the queue.
--
-- KEYS[1] seen    ZSET  member = waiting user id, score = last seen (ms)
-- ARGV[1..] user ids
--
-- Returns the number of users updated. Only users already in the set (still
-- waiting) are updated: ZADD XX.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = 0
for i = 1, #ARGV do
  n = n + redis.call('ZADD', KEYS[1], 'XX', 'CH', now, ARGV[i])
end
return n
