-- snapshot: the state every instance keeps per room to derive positions
-- without a Redis call per connection, and what the ETA is estimated
-- from (package queue/estimate), read atomically.
--
-- KEYS[1] stats   HASH  serving, ev, rate, counters
-- KEYS[2] queue   ZSET  member = user id, score = ticket number
-- KEYS[3] gone    ZSET  tickets of waiting users who left (score = ticket)
-- KEYS[4] cfg     HASH  target, method, ttl_ms, paused, message, expected_order_ms
-- KEYS[5] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[6] measured HASH hold_ms, no_show: what the room measured last
-- ARGV (optional) ev, serving, count: what the caller already holds of the
--   departed tickets (queue.GoneHeld). Without them the list is sent.
--
-- Returns {serving, ev, waiting, rate, target, closed, sched, admitted,
-- expired, departed, ttlMs, paused, message, active, holds, holdMs, binMs,
-- nbins, bin counts (nbins of them)..., expectedOrderMs, lastHoldMs,
-- lastNoShow, lastAbsent, passed, passedWaiting, count, follows, gone...}:
-- the last admitted
-- ticket, the room's event sequence number, the queue length, the measured
-- rate, targetActive, 1 when the method is reject, the room's schedule
-- number (bumped at each opening and at each change of the method, the
-- opening time, the pause or the message), the counters and entry window
-- the ETA needs, 1 when the room is paused, the operator's message to
-- waiting users ('' when none), the slots held, the slots freed by an
-- ended order and their total hold time, the active slots by time left on
-- their deadline (bin i counts deadlines i…i+1 bins from now; the first
-- also those already past, the last everything beyond), the operator's
-- expected order time (0: none), the hold, no-show and absent shares the
-- room measured last ('' when never), the users admission passed over
-- (each once; admit.lua) and those of them still waiting, how many departed
-- tickets lie above serving, 1 when they follow (0: left out), and the
-- departed tickets above serving, ascending, when they follow.
--
-- The list is left out when the caller's ev and serving are the room's and
-- its count is the room's count: every script that changes the departed
-- tickets above serving (leave, grant, an idle drop, an admission that
-- moves serving) bumps ev in the same call, so a caller that derived its
-- list gap-free up to this ev holds exactly this list; serving and the
-- count cost O(log n) and catch an ev that does not witness a change (a
-- Redis that lost writes and counted ev up again). Reading the list is
-- O(n): tens of ms at 150,000 departures, every second on every instance.
local nbins = 25
local st = redis.call('HMGET', KEYS[1], 'serving', 'ev', 'rate', 'sched', 'admitted', 'expired', 'left', 'abandoned',
                      'holds', 'hold_ms', 'passed', 'passed_gone', 'top')
local serving = st[1] or '0'
local cfg = redis.call('HMGET', KEYS[4], 'target', 'method', 'ttl_ms', 'paused', 'message', 'expected_order_ms')
local ttl = tonumber(cfg[3] or '0') or 0
local out = {serving, st[2] or '0', redis.call('ZCARD', KEYS[2]), st[3] or '0',
             cfg[1] or '0', cfg[2] == 'reject' and 1 or 0, st[4] or '0',
             tonumber(st[5] or '0'), tonumber(st[6] or '0'),
             tonumber(st[7] or '0') + tonumber(st[8] or '0') - tonumber(st[12] or '0'), ttl,
             cfg[4] == '1' and 1 or 0, cfg[5] or '',
             redis.call('ZCARD', KEYS[5]), tonumber(st[9] or '0'), tonumber(st[10] or '0')}
local bin = math.max(math.ceil(ttl / (nbins - 1)), 1000)
out[#out + 1] = bin
out[#out + 1] = nbins
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 0, nbins - 1 do
  local lo, hi = '(' .. (now + i * bin), now + (i + 1) * bin
  if i == 0 then lo = '-inf' end
  if i == nbins - 1 then hi = '+inf' end
  out[#out + 1] = redis.call('ZCOUNT', KEYS[5], lo, hi)
end
local last = redis.call('HMGET', KEYS[6], 'hold_ms', 'no_show', 'absent')
out[#out + 1] = tonumber(cfg[6] or '0') or 0
out[#out + 1] = last[1] or ''
out[#out + 1] = last[2] or ''
out[#out + 1] = last[3] or ''
-- passed over: ever (each user once) and still waiting (a ticket at or
-- below the highest admitted)
out[#out + 1] = tonumber(st[11] or '0')
local top = st[13] or serving
out[#out + 1] = redis.call('ZCOUNT', KEYS[2], '-inf', top)
local count = redis.call('ZCOUNT', KEYS[3], '(' .. serving, '+inf')
local held = #ARGV == 3 and tonumber(ARGV[1]) == tonumber(st[2] or '0') and
             tonumber(ARGV[2]) == tonumber(serving) and tonumber(ARGV[3]) == count
out[#out + 1] = count
out[#out + 1] = held and 0 or 1
if not held then
  local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. serving, '+inf')
  for i = 1, #gone do
    out[#out + 1] = gone[i]
  end
end
return out
