-- ptake: read the users of one sealed part at places cursor … cursor +
-- count − 1 of its order (prequeue_merge.go: the take of a slice). It changes
-- nothing, so a repeated take returns the same users.
--
-- KEYS[1] prequeue ZSET  the part's users in their order (commits remove
--                        them from the front)
-- KEYS[2] state    HASH  merging, committed (places removed so far)
-- KEYS[3] left     SET   users who left after the seal (kept in place so
--                        the places of the others do not move)
-- ARGV[1] cursor: the first place to read (places count from the seal)
-- ARGV[2] count
--
-- Returns {status, user, score, left, user, score, left, …}: status 1,
-- then one triple per user taken, in the part's order (at most count):
-- the user id, their score in the part (the arrival, or the shuffled
-- place) and left (1: they left after the seal, else 0); or {0} when the
-- part is not being merged or has committed past cursor (a stale caller).
local st = redis.call('HMGET', KEYS[2], 'merging', 'committed')
local committed = tonumber(st[2] or '0')
local cursor, count = tonumber(ARGV[1]), tonumber(ARGV[2])
if st[1] ~= '1' or cursor < committed then
  return {0}
end
local out = {1}
if count <= 0 then
  return out
end
local from = cursor - committed
local got = redis.call('ZRANGE', KEYS[1], from, from + count - 1, 'WITHSCORES')
for i = 1, #got, 2 do
  out[#out + 1] = got[i]
  out[#out + 1] = got[i + 1]
  out[#out + 1] = redis.call('SISMEMBER', KEYS[3], got[i])
end
return out
