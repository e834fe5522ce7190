-- psync: copy the room's fields a part's enter needs into the part's cfg,
-- unless the part already holds a copy as new or newer (version).
--
-- KEYS[1] cfg HASH: the part's copy
-- ARGV[1] version; ARGV[2] opens_at ('' for none); ARGV[3] parts;
-- ARGV[4] paused (0|1: said to the part's arrivals); ARGV[5] method
--
-- Returns 1 when the copy was written, 0 when a newer one was there.
if tonumber(redis.call('HGET', KEYS[1], 'version') or '-1') >= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'parts', ARGV[3], 'paused', ARGV[4], 'method', ARGV[5])
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], 'opens_at')
else
  redis.call('HSET', KEYS[1], 'opens_at', ARGV[2])
end
return 1
