-- append: record one second's point of a room's history, and the room's
-- ticket clock (which ticket had been issued by which second).
--
-- KEYS[1] points   LIST  "[tMs,waiting,active,targetActive,admitted,rate,
--                        eta,seq,head,etaMid,midTicket]", oldest first, one
--                        per second at most (ARGV[12], ARGV[7], ARGV[8],
--                        ARGV[13], ARGV[14])
-- KEYS[2] meta     HASH  claimed, appended (Unix s of the last point),
--                        admitted (the all-time count at the last point),
--                        seq (the last ticket at the last point), origin
--                        (the second of the clock's open-ended first entry)
-- KEYS[3] tickets  ZSET  member = second (Unix s), score = the last ticket
--                        issued by then; only seconds in which it grew
-- KEYS[4] cfg      HASH  the room's configuration: there while the room is
-- ARGV[1] the claimed second (Unix s)
-- ARGV[2] waiting   ARGV[3] active   ARGV[4] targetActive
-- ARGV[5] admitted, all time (the point holds the growth since the last)
-- ARGV[6] the admission rate, formatted
-- ARGV[7] the last ticket issued
-- ARGV[8] the oldest waiting ticket (0: nobody waiting)
-- ARGV[9] points kept   ARGV[10] clock entries kept
-- ARGV[11] lifetime of the keys (s)
-- ARGV[12] the ETA the last in line was shown (s; -1: withheld or nobody)
-- ARGV[13] the ETA the user in the middle was shown (s; -1 likewise)
-- ARGV[14] the ticket of the user in the middle (0: nobody)
--
-- Returns 1 when the point was recorded, 0 when a point of this second or
-- a later one is there already (a late caller: points stay in order), -1
-- when the room is gone (deleted since its figures were read: the delete
-- removed its history, which is not made again).
if redis.call('EXISTS', KEYS[4]) == 0 then
  return -1
end
local sec = tonumber(ARGV[1])
local m = redis.call('HMGET', KEYS[2], 'appended', 'admitted', 'seq')
if tonumber(m[1] or '0') >= sec then
  return 0
end
local total = tonumber(ARGV[5])
local grown = 0
if m[2] then
  grown = math.max(total - tonumber(m[2]), 0)
end
redis.call('RPUSH', KEYS[1], '[' .. ARGV[1] .. '000,' .. ARGV[2] .. ',' .. ARGV[3] .. ',' .. ARGV[4] .. ',' ..
  string.format('%d', grown) .. ',' .. ARGV[6] .. ',' .. ARGV[12] .. ',' .. ARGV[7] .. ',' .. ARGV[8] .. ',' .. ARGV[13] .. ',' .. ARGV[14] .. ']')
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[9]), -1)

-- The ticket clock. A lower last ticket means the room was made anew:
-- the clock starts again.
local seq = tonumber(ARGV[7])
local prev = tonumber(m[3] or '-1')
if seq < prev then
  redis.call('DEL', KEYS[3])
  redis.call('HDEL', KEYS[2], 'origin')
  prev = -1
end
if seq > prev then
  redis.call('ZADD', KEYS[3], seq, ARGV[1])
  redis.call('HSETNX', KEYS[2], 'origin', ARGV[1])
end
-- Entries below the oldest waiting ticket tell nothing any more.
local head = tonumber(ARGV[8])
if head == 0 then
  head = seq + 1
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. head)
if redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -tonumber(ARGV[10]) - 1) > 0 then
  -- Capped: the first entry left is open-ended now.
  redis.call('HSET', KEYS[2], 'origin', redis.call('ZRANGE', KEYS[3], 0, 0)[1])
end
redis.call('HSET', KEYS[2], 'appended', ARGV[1], 'admitted', ARGV[5], 'seq', ARGV[7])
for i = 1, 3 do
  redis.call('EXPIRE', KEYS[i], ARGV[11])
end
return 1
