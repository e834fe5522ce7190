-- release: free a user's active slot (their order finished, or they left).
--
-- KEYS[1] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[2] tokens  HASH  user id -> entry token
-- KEYS[3] stats   HASH  counters: holds, hold_ms (the ETA's hold time)
-- KEYS[4] cfg     HASH  ttl_ms
-- ARGV[1] user id
-- ARGV[2] "order" to release an in-flight order's slot only (kept when the
--         user was admitted again meanwhile and holds a new token), or
--         "all" to drop the slot and any entry token (leave)
-- ARGV[3] the end of the entry window the order's token had (ms, Redis
--         clock; "order" only, 0 when unknown): the admission was one entry
--         window before it, so the slot's hold — admission to release — is
--         counted in stats (holds +1, hold_ms + the hold)
--
-- Returns 1 when a slot was freed, 0 otherwise.
if ARGV[2] == 'order' and redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return 0
end
redis.call('HDEL', KEYS[2], ARGV[1])
local freed = redis.call('ZREM', KEYS[1], ARGV[1])
local deadline = tonumber(ARGV[3] or '0') or 0
if freed == 1 and ARGV[2] == 'order' and deadline > 0 then
  local ttl = tonumber(redis.call('HGET', KEYS[4], 'ttl_ms') or '0') or 0
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local hold = now - (deadline - ttl)
  if ttl > 0 and hold >= 0 then
    redis.call('HINCRBY', KEYS[3], 'holds', 1)
    redis.call('HINCRBY', KEYS[3], 'hold_ms', hold)
  end
end
return freed
