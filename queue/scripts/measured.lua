-- measured: keep what a room has just measured of its orders for its next
-- sale, only while the room exists (a room deleted meanwhile gets no key
-- that would outlive it).
--
-- KEYS[1] cfg       HASH  the room's configuration (its existence is checked)
-- KEYS[2] measured  HASH  hold_ms, no_show, at_ms, absent
-- ARGV[1] the mean hold in ms
-- ARGV[2] the no-show share (0 to 1)
-- ARGV[3] when it was measured (ms)
-- ARGV[4] the share of users found absent at the front (0 to 1)
--
-- Returns 1 when written, 0 when the room is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[2], 'hold_ms', ARGV[1], 'no_show', ARGV[2], 'at_ms', ARGV[3], 'absent', ARGV[4])
return 1
