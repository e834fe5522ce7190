-- release: free a user's active slot (their order finished, or they left).
--
-- KEYS[1] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[2] tokens  HASH  user id -> entry token
-- ARGV[1] user id
-- ARGV[2] "order" to release an in-flight order's slot only (kept when the
--         user was admitted again meanwhile and holds a new token), or
--         "all" to drop the slot and any entry token (leave)
--
-- Returns 1 when a slot was freed, 0 otherwise.
if ARGV[2] == 'order' and redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return 0
end
redis.call('HDEL', KEYS[2], ARGV[1])
return redis.call('ZREM', KEYS[1], ARGV[1])
