-- pleave: a pre-queued user leaves one part of a sharded pre-queue.
-- Before the seal they are removed; after it they are marked (the left
-- set), so that the places of the others do not move while the opening
-- merges the part, and the merge passes over them.
--
-- KEYS[1] prequeue ZSET; KEYS[2] state HASH (merging); KEYS[3] left SET
-- ARGV[1] user id
--
-- Returns 1 when the user was in the part, else 0.
local user = ARGV[1]
if not redis.call('ZSCORE', KEYS[1], user) or redis.call('SISMEMBER', KEYS[3], user) == 1 then
  return 0
end
if redis.call('HGET', KEYS[2], 'merging') == '1' then
  redis.call('SADD', KEYS[3], user)
else
  redis.call('ZREM', KEYS[1], user)
end
return 1
