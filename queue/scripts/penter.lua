-- penter: put a user in one part of a room's sharded pre-queue (prequeue_parts.go),
-- or report that they are there. Runs on the part's own hash tag {room~p},
-- so a Redis Cluster spreads the parts of one hot room over its masters.
--
-- KEYS[1] cfg      HASH  the part's copy of the room's fields: opens_at (ms),
--                        parts (how many parts the room has), paused, method,
--                        version (syncParts)
-- KEYS[2] prequeue ZSET  member = user id, score = arrival (µs, this part's
--                        Redis clock), or the shuffled place (< 0) once the
--                        opening shuffled the part
-- KEYS[3] state    HASH  sealed_for (the opening it was sealed for), merging
-- KEYS[4] left     SET   users who left after the seal (pleave.lua)
-- ARGV[1] user id
-- ARGV[2] the number of parts the caller believes the room has
--
-- Returns {"PREQUEUE", new, partCount, opensAtMs, nowMs, paused}:
--   2 new: 1 when the user entered now, 0 when they were already there
--   3 partCount: the users in this part after the call
--   4 opensAtMs: the room's opening as the part's copy has it (ms)
--   5 nowMs: this part's Redis clock (ms)
--   6 paused: 1 when the room is paused, else 0
-- or {"ROOM"}:
-- the room must decide (no copy, another number of parts, not a queueing
-- method, past the opening by this part's clock, or sealed by an opening),
-- and the caller runs the room's enter script. A paused room takes
-- arrivals like a running one: the part's copy of paused is only said
-- (the room's admission runs hold while it is set).
local cfg = redis.call('HMGET', KEYS[1], 'opens_at', 'parts', 'method', 'paused')
local opensAt = tonumber(cfg[1])
if not opensAt or tonumber(cfg[2]) ~= tonumber(ARGV[2]) or
   cfg[3] == 'reject' or cfg[3] == 'passthrough' then
  return {'ROOM'}
end
local paused = cfg[4] == '1' and 1 or 0
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local user = ARGV[1]
if redis.call('ZSCORE', KEYS[2], user) and redis.call('SISMEMBER', KEYS[4], user) == 0 then
  return {'PREQUEUE', 0, redis.call('ZCARD', KEYS[2]), opensAt, now, paused}
end
local st = redis.call('HMGET', KEYS[3], 'sealed_for', 'merging')
if now >= opensAt or st[2] == '1' or st[1] == cfg[1] then
  return {'ROOM'}
end
redis.call('ZADD', KEYS[2], 'NX', tonumber(t[1]) * 1000000 + tonumber(t[2]), user)
return {'PREQUEUE', 1, redis.call('ZCARD', KEYS[2]), opensAt, now, paused}
