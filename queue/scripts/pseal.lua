-- pseal: close one part of a sharded pre-queue to arrivals at the room's
-- opening (prequeue_merge.go), and count it. Idempotent: a sealed part no longer
-- changes size until its users are committed into the room's queue, so
-- every instance that seals it reads the same count.
--
-- KEYS[1] prequeue ZSET  the part's arrivals
-- KEYS[2] state    HASH  sealed_for, merging, committed, shuffle_seed
-- ARGV[1] the opening's tag (the room's opens_at in ms, or "none")
--
-- Returns the part's size.
redis.call('HSET', KEYS[2], 'sealed_for', ARGV[1], 'merging', '1')
redis.call('HSETNX', KEYS[2], 'committed', 0)
return redis.call('ZCARD', KEYS[1])
