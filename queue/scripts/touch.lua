-- touch: mark waiting users as present (they polled or hold a stream), so
-- the admission run neither passes them over as absent nor removes them as
-- having abandoned the queue.
--
-- KEYS[1] seen    ZSET  member = waiting user id, score = when the user is
--                       expected back by (ms, Redis clock)
-- ARGV[1] grace in ms: the users are expected back by now + grace
-- ARGV[2..] user ids
--
-- Returns the number of users updated. Only users already in the set (still
-- waiting) are updated (XX), and a score only grows (GT): a shorter grace
-- told by one instance never cuts the longer one another told (a stream).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = now + tonumber(ARGV[1])
local n = 0
for i = 2, #ARGV do
  n = n + redis.call('ZADD', KEYS[1], 'XX', 'GT', 'CH', due, ARGV[i])
end
return n
