-- touch: mark waiting users as present (they polled or hold a stream), so
-- the admission run neither passes them over as absent nor removes them as
-- having abandoned the queue; those it passed over already are taken back.
--
-- KEYS[1] seen    ZSET  member = waiting user id, score = when the user is
--                       expected back by (ms, Redis clock)
-- KEYS[2] queue   ZSET  member = user id, score = ticket number
-- KEYS[3] stats   HASH  scan: the admission's cursor (admit.lua)
-- KEYS[4] back    ZSET  passed-over users seen again, score = ticket
-- ARGV[1] grace in ms: the users are expected back by now + grace
-- ARGV[2..] user ids
--
-- Returns the number of users updated. Only users already in the set (still
-- waiting) are updated (XX), and a score only grows (GT): a shorter grace
-- told by one instance never cuts the longer one another told (a stream).
-- A waiting user at or below scan was passed over as absent: seen now,
-- they join the back set, which the next run admits from first.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = now + tonumber(ARGV[1])
local n = 0
for i = 2, #ARGV do
  n = n + redis.call('ZADD', KEYS[1], 'XX', 'GT', 'CH', due, ARGV[i])
end
local scan = tonumber(redis.call('HGET', KEYS[3], 'scan') or '0')
if scan > 0 and #ARGV > 1 then
  local tickets = redis.call('ZMSCORE', KEYS[2], unpack(ARGV, 2))
  for j = 1, #tickets do
    if tickets[j] and tonumber(tickets[j]) <= scan then
      redis.call('ZADD', KEYS[4], 'NX', tickets[j], ARGV[j + 1])
    end
  end
end
return n
