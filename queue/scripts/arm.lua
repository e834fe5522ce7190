-- arm: mark a room with a sharded pre-queue (prequeueParts > 1) as having
-- an opening to merge (prequeue_merge.go). The room's admission runs then report
-- the opening due at opens_at (admit.lua: pm_state), whether or not the
-- room's own keys hold anyone, and the busy check sees the merge key.
--
-- KEYS[1] stats HASH  pm_state: armed | moving
-- KEYS[2] merge HASH  the merge's record (state, seed, counts, cursors, …)
--
-- Returns 1 when armed now, 0 when already armed or merging.
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('HSET', KEYS[2], 'state', 'armed')
redis.call('HSET', KEYS[1], 'pm_state', 'armed')
return 1
