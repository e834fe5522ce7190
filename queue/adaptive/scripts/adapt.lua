-- adapt: store one window's signals of a room and, in adaptive mode, the
-- limit controller's new targetActive. Run only by the instance holding the
-- room's lease for the window.
--
-- KEYS[1] cfg       HASH  target, mode
-- KEYS[2] adaptive  HASH  the last window's signals and the last change
--                         (at, win_ms, orders, errors, p90_us, base_us,
--                         wait_us, hold_us, stale), the growth ceiling
--                         (cap, cap_until) and the last change (lc_at,
--                         lc_from, lc_to, lc_reason)
-- ARGV[1] the limit the decision was made from
-- ARGV[2] the new limit, or "" for no change
-- ARGV[3] the reason of the change
-- ARGV[4] now (ms)
-- ARGV[5..] field, value pairs of the signals
--
-- Returns 1 when targetActive changed; 0 when no change was asked, the room
-- left adaptive mode, or an operator changed targetActive meanwhile (their
-- value stands; the next window decides from it).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local fields = {}
for i = 5, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
if #fields > 0 then
  redis.call('HSET', KEYS[2], unpack(fields))
end
if ARGV[2] == '' then
  return 0
end
local cfg = redis.call('HMGET', KEYS[1], 'target', 'mode')
if cfg[2] ~= 'adaptive' or cfg[1] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'target', ARGV[2])
redis.call('HSET', KEYS[2], 'lc_at', ARGV[4], 'lc_from', ARGV[1], 'lc_to', ARGV[2], 'lc_reason', ARGV[3])
return 1
