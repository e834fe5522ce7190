-- mbegin: begin merging a room's sharded pre-queue into its queue, once
-- every part is sealed and counted (prequeue_merge.go). The first call records the
-- seed, the method and the parts' sizes; later calls return the record.
--
-- KEYS[1] cfg      HASH  opens_at, method
-- KEYS[2] stats    HASH  pm_state
-- KEYS[3] merge    HASH  the record: state, seed, method, tag, counts (csv),
--                        n (their sum), slice (slices appended), cursors (csv),
--                        moved
-- KEYS[4] prequeue ZSET  the room's own pre-queue (late arrivals)
-- ARGV[1] seed (hex, drawn in Go); ARGV[2] the opening's tag;
-- ARGV[3] counts (csv, one per part); ARGV[4] their sum
--
-- Returns {state, seed, method, tag, counts, n, slice, cursors}, the
-- record, when state is "moving": seed (hex), method (random or fifo),
-- the opening's tag, counts (csv, one per part), n (their sum), slice
-- (slices appended so far) and cursors (csv, one per part); else only
-- {state}: "none" (nothing armed), "notyet" (before opens_at by the
-- room's clock) or "empty" (nobody to merge: the record goes, quietly).
local rec = redis.call('HMGET', KEYS[3], 'state', 'seed', 'method', 'tag', 'counts', 'n', 'slice', 'cursors')
if rec[1] == 'moving' then
  return rec
end
if rec[1] ~= 'armed' then
  return {'none'}
end
local cfg = redis.call('HMGET', KEYS[1], 'opens_at', 'method')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local opensAt = tonumber(cfg[1])
if opensAt and now < opensAt then
  return {'notyet'}
end
if tonumber(ARGV[4]) == 0 and redis.call('ZCARD', KEYS[4]) == 0 then
  redis.call('DEL', KEYS[3])
  redis.call('HDEL', KEYS[2], 'pm_state')
  return {'empty'}
end
local method = cfg[2] or 'fifo'
local zeros = {}
for _ in string.gmatch(ARGV[3], '[^,]+') do
  zeros[#zeros + 1] = '0'
end
local cursors = table.concat(zeros, ',')
redis.call('HSET', KEYS[3], 'state', 'moving', 'seed', ARGV[1], 'method', method, 'tag', ARGV[2],
  'counts', ARGV[3], 'n', ARGV[4], 'slice', 0, 'cursors', cursors, 'moved', 0)
redis.call('HSET', KEYS[2], 'pm_state', 'moving')
return {'moving', ARGV[1], method, ARGV[2], ARGV[3], ARGV[4], 0, cursors}
