-- psync: copy the room's fields a part's enter needs into the part's cfg,
-- unless the part already holds a copy as new or newer (version).
--
-- KEYS[1] cfg HASH: the part's copy
-- ARGV[1] version; ARGV[2] opens_at ('' for none); ARGV[3] parts;
-- ARGV[4] method (a pause is not copied: a paused room takes arrivals in
-- its parts as a running one does; a copy written before keeps a paused
-- field that nothing reads, and loses it here)
--
-- Returns 1 when the copy was written, 0 when a newer one was there.
if tonumber(redis.call('HGET', KEYS[1], 'version') or '-1') >= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'parts', ARGV[3], 'method', ARGV[4])
redis.call('HDEL', KEYS[1], 'paused')
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], 'opens_at')
else
  redis.call('HSET', KEYS[1], 'opens_at', ARGV[2])
end
return 1
