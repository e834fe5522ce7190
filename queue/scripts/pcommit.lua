-- pcommit: remove from one sealed part the users the room's queue has
-- taken up to cursor (prequeue_merge.go: the commit of a slice). Idempotent by the
-- cursor; a commit behind the part's does nothing. With final = 1 (the
-- whole part is in the room), the part's merge state goes and the part
-- stays sealed for this opening (arrivals go to the room).
--
-- KEYS[1] prequeue ZSET; KEYS[2] state HASH; KEYS[3] left SET
-- ARGV[1] cursor; ARGV[2] final (0|1); ARGV[3] the opening's tag
--
-- Returns the part's size after the commit, or -1 for a stale caller.
local st = redis.call('HMGET', KEYS[2], 'merging', 'committed', 'sealed_for')
if st[1] ~= '1' or st[3] ~= ARGV[3] then
  return -1
end
local committed = tonumber(st[2] or '0')
local cursor = tonumber(ARGV[1])
if cursor > committed then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, cursor - committed - 1)
  redis.call('HSET', KEYS[2], 'committed', cursor)
end
if ARGV[2] == '1' then
  redis.call('DEL', KEYS[3])
  redis.call('HDEL', KEYS[2], 'merging', 'committed', 'shuffle_seed')
end
return redis.call('ZCARD', KEYS[1])
