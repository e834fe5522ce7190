-- snapshot: the state every instance keeps per room to derive positions
-- without a Redis call per connection, read atomically.
--
-- KEYS[1] stats   HASH  serving, ev, rate, counters
-- KEYS[2] queue   ZSET  member = user id, score = ticket number
-- KEYS[3] gone    ZSET  tickets of waiting users who left (score = ticket)
-- KEYS[4] cfg     HASH  target, method, ttl_ms, paused, message
--
-- Returns {serving, ev, waiting, rate, target, closed, sched, admitted,
-- expired, departed, ttlMs, paused, message, gone...}: the last admitted
-- ticket, the room's event sequence number, the queue length, the measured
-- rate, targetActive, 1 when the method is reject, the room's schedule
-- number (bumped at each opening and at each change of the method, the
-- opening time, the pause or the message), the counters and entry window
-- the ETA needs, 1 when the room is paused, the operator's message to
-- waiting users ('' when none), and the departed tickets above serving,
-- ascending.
local st = redis.call('HMGET', KEYS[1], 'serving', 'ev', 'rate', 'sched', 'admitted', 'expired', 'left', 'abandoned')
local serving = st[1] or '0'
local cfg = redis.call('HMGET', KEYS[4], 'target', 'method', 'ttl_ms', 'paused', 'message')
local out = {serving, st[2] or '0', redis.call('ZCARD', KEYS[2]), st[3] or '0',
             cfg[1] or '0', cfg[2] == 'reject' and 1 or 0, st[4] or '0',
             tonumber(st[5] or '0'), tonumber(st[6] or '0'),
             tonumber(st[7] or '0') + tonumber(st[8] or '0'), tonumber(cfg[3] or '0'),
             cfg[4] == '1' and 1 or 0, cfg[5] or ''}
local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. serving, '+inf')
for i = 1, #gone do
  out[#out + 1] = gone[i]
end
return out
