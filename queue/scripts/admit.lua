-- admit: one admission tick for one room. Safe to run from any number of
-- instances at once: each run is atomic, so active never exceeds target.
--
-- KEYS[1] cfg     HASH  target, ttl_ms, paused, method, opens_at
-- KEYS[2] queue   ZSET  member = user id, score = ticket number
-- KEYS[3] active  ZSET  member = user id, score = deadline (ms, Redis clock)
-- KEYS[4] tokens  HASH  user id -> entry token
-- KEYS[5] stats   HASH  rate, serving, counters, rate-window state, ev
-- KEYS[6] gone    ZSET  tickets of waiting users who left (score = ticket)
-- KEYS[7] seen    ZSET  member = waiting user id, score = when the user is
--                       expected back by (ms, Redis clock: seen + grace)
-- KEYS[8] prequeue ZSET member = user id, score = arrival number
-- KEYS[9] idle    ZSET  member = user id dropped as idle, score = when (ms)
-- KEYS[10] back   ZSET  member = waiting user id passed over as absent and
--                       seen again since (touch.lua, enter.lua), score =
--                       ticket
-- ARGV[1] pub/sub channel of the room
-- ARGV[2] room name (goes into the event)
-- ARGV[3] rate window in ms (admissions are measured over this much busy time)
-- ARGV[4] idle timeout in ms: a waiting user overdue this long past the
--         time they were expected back (no poll, no stream) has abandoned
--         the queue and is removed; 0: never
-- ARGV[5] how long a drop for idleness is remembered, in ms (the idle set
--         keeps entries this long and expires this long after the last drop)
-- ARGV[6] 1: presence-aware admission (pass over the absent); 0: pop in
--         ticket order whoever waits
-- ARGV[7..] fresh entry tokens, one per user this run may admit
--
-- Steps: prune expired admissions -> capacity = target - active -> take up
-- to min(capacity, #tokens) users in ticket order -> store their tokens ->
-- record them active until now + ttl -> move serving -> measure the rate ->
-- publish ONE event.
--
-- Presence-aware admission: a waiting user whose seen score (expected back
-- by) has passed is absent and passed over: they keep their ticket and
-- place, and the first run after they are seen again admits them ahead of
-- everyone behind. A user with no seen entry counts as present. The runs
-- share a cursor, stats scan: every waiting user with a ticket at or below
-- it was looked at and found absent, and is not looked at again unless seen
-- since (a touch or an enter then puts them in the back set). Each run
-- takes the back set first, then walks the line beyond scan, both in
-- ticket order, so FIFO among present users holds; a run with no free
-- slot walks too, passing over the absent at the front until the first
-- present user. Work per run: at most n + LOOK users looked at (n: the
-- users it may admit; LOOK = 10,000), in pages of at most PAGE = 1000
-- users and at most four commands each, plus the writes of the users
-- admitted; whatever the length of the line. Each absent user is looked
-- at once per absence, so the absent ahead cost nothing once passed over:
-- a present user is admitted at the first run with a free slot unless
-- more than LOOK users ahead of them went absent since the last run (each
-- LOOK more: one more run).
--
-- serving: every ticket at or below it no longer waits (with nobody passed
-- over: the last admitted ticket). A passed-over user holds serving below
-- their ticket; the users admitted above it join the gone set and the
-- event's left list like departures, so position = ticket - serving -
-- departed below (stream/doc.go) stays the 1-based rank for everyone.
--
-- Methods: fifo and random pop in ticket order up to target - active;
-- passthrough pops everyone waiting (targetActive does not bound it); reject
-- admits nobody. Before a scheduled opening (now < opens_at) nobody is
-- admitted; at or after it, while the pre-queue still holds users, the run
-- admits nobody and reports due = 1: the caller runs the opening script and
-- then admits again.
--
-- Returns 19 elements:
--    1 admitted: how many users this run admitted
--    2 waiting: users in the queue after the run
--    3 active: admissions holding a slot after the run
--    4 want: how many tokens this run could have used (min(capacity, queue
--      length before popping)); the caller passes at least that many next time
--    5 pruned: admissions whose entry window ended, removed by this run
--    6 rate: the measured admission rate, users/s (a string; '0': not yet)
--    7 target: targetActive
--    8 paused: 1 when the room is paused, else 0
--    9 users: the admitted user ids in ticket order (an array)
--   10 abandoned: waiting users dropped by the idle timeout (ARGV[4])
--   11 due: 1 when the opening time has come and the pre-queue waits to be
--      opened (nobody was admitted), else 0
--   12 prequeue: users in the room's own pre-queue
--   13 next_deadline: the earliest deadline in the active set (ms, Redis
--      clock; 0: nobody active)
--   14 opens_at: the scheduled opening (ms; 0: none)
--   15 passed: absent users still waiting ahead of the last one admitted
--   16 passed_new: those of them passed over for the first time (each
--      absent user is counted once; the stats field passed sums them)
--   17 merge: a sharded pre-queue's merge: 0 none, 1 armed, 2 moving
--   18 adaptive: 1 when the room's mode is adaptive (the caller's pool gate
--      bounds the tokens it passes to such a room's runs), else 0
--   19 looked: the waiting users this run looked at for presence (at most
--      n + LOOK; 0 without presence-aware admission)
-- With 12 to 14 the caller knows when the room next needs a run: every
-- tick while anyone waits, at the next deadline or the opening otherwise,
-- never when the room is empty. No such room: 16 elements, admitted -1,
-- rate '0', users empty, every other 0.
-- the users one run looks at beyond those it may admit, and per page
local LOOK, PAGE = 10000, 1000

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1, 0, 0, 0, 0, '0', 0, 0, {}, 0, 0, 0, 0, 0, 0, 0}
end
local cfg = redis.call('HMGET', KEYS[1], 'target', 'ttl_ms', 'paused', 'method', 'opens_at', 'mode')
local target = tonumber(cfg[1]) or 0
local ttl = tonumber(cfg[2]) or 120000
local paused = cfg[3] == '1'
local method = cfg[4] or 'fifo'
local opensAt = tonumber(cfg[5])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local scheduled = opensAt ~= nil and now < opensAt
local prequeued = redis.call('ZCARD', KEYS[8])
-- pm_state: a sharded pre-queue's merge (queue/prequeue_merge.go), armed until it
-- begins, then moving; admission starts once it moves (its first slice).
local pm = redis.call('HGET', KEYS[5], 'pm_state')
local due = not scheduled and (pm == 'armed' or (not pm and prequeued > 0))
-- held: the room admits nobody this run (its waiting users keep their place)
local held = paused or scheduled or due or method == 'reject'

-- 1. prune admissions whose window (or in-flight order deadline) has passed
-- (bounded per run so one tick never stalls Redis; the rest go next tick)
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 1000)
local pruned = #expired
for i = 1, pruned do
  redis.call('HDEL', KEYS[4], expired[i])
  redis.call('ZREM', KEYS[3], expired[i])
end
if pruned > 0 then
  redis.call('HINCRBY', KEYS[5], 'expired', pruned)
end

-- top: the highest ticket ever admitted (serving, before any pass-over);
-- a waiting user with a ticket at or below it has been passed over. It
-- moves only once this run's admissions are stored (step 2).
local sv = redis.call('HMGET', KEYS[5], 'serving', 'top')
local servingBefore = tonumber(sv[1] or '0')
local top = tonumber(sv[2] or sv[1] or '0')

-- 1b. remove waiting users not seen for the idle timeout (bounded per run);
-- their tickets join the gone set so every instance's positions stay exact,
-- and the idle set remembers them, so a later status read can say why they
-- are no longer waiting (entering again forgets it). passedGone: those of
-- them passed over before, counted once as passed (stats passed_gone)
local passedGone = 0
local idle = tonumber(ARGV[4])
local left = {}
if idle > 0 then
  local stale = redis.call('ZRANGEBYSCORE', KEYS[7], '-inf', now - idle, 'LIMIT', 0, 1000)
  for i = 1, #stale do
    local ticket = redis.call('ZSCORE', KEYS[2], stale[i])
    redis.call('ZREM', KEYS[7], stale[i])
    if ticket then
      redis.call('ZREM', KEYS[2], stale[i])
      redis.call('ZREM', KEYS[10], stale[i])
      redis.call('ZADD', KEYS[6], ticket, ticket)
      redis.call('ZADD', KEYS[9], now, stale[i])
      left[#left + 1] = tonumber(ticket)
      if tonumber(ticket) <= top then passedGone = passedGone + 1 end
    end
  end
  if #left > 0 then
    redis.call('HINCRBY', KEYS[5], 'abandoned', #left)
    if passedGone > 0 then redis.call('HINCRBY', KEYS[5], 'passed_gone', passedGone) end
    -- forget drops older than the memory (bounded per run, like the adds)
    local keep = tonumber(ARGV[5])
    local old = redis.call('ZRANGEBYSCORE', KEYS[9], '-inf', now - keep, 'LIMIT', 0, 1000)
    if #old > 0 then
      redis.call('ZREM', KEYS[9], unpack(old))
    end
    redis.call('PEXPIRE', KEYS[9], keep)
  end
end

local abandoned = #left

-- 2. capacity and pop
local active = redis.call('ZCARD', KEYS[3])
local waiting = redis.call('ZCARD', KEYS[2])
local capacity = target - active
if method == 'passthrough' then capacity = waiting end
if capacity < 0 then capacity = 0 end
local waitingBefore = waiting
local want = math.min(capacity, waiting)
if held then want = 0 end
local n = math.min(want, #ARGV - 6)
local presence = ARGV[6] == '1'

local admitted, tickets = {}, {}
-- passed: the absent users still waiting ahead of the last one admitted
-- this run; passedNew: those among them passed over for the first time
-- (a ticket above top: nobody behind them had been admitted before)
-- looked: the users this run looked at (at most n + LOOK)
local passed, passedNew, looked = 0, 0, 0
if presence and not held then
  local scanBefore = tonumber(redis.call('HGET', KEYS[5], 'scan') or '0')
  local scan = scanBefore
  local budget = n + LOOK
  -- a. the passed-over users seen again, in ticket order: all at or below
  -- scan, so ahead of everyone beyond it. Absent again: out of the back
  -- set (a later touch puts them back); gone from the line: out too.
  while #admitted < n and budget > 0 do
    local page = redis.call('ZRANGE', KEYS[10], 0, math.min(budget, PAGE) - 1)
    if #page == 0 then break end
    local due = redis.call('ZMSCORE', KEYS[7], unpack(page))
    local queued = redis.call('ZMSCORE', KEYS[2], unpack(page))
    local done = {}
    for j = 1, #page do
      if #admitted == n then break end
      done[#done + 1] = page[j]
      if queued[j] and not (due[j] and tonumber(due[j]) < now) then
        admitted[#admitted + 1] = page[j]
        tickets[#tickets + 1] = tonumber(queued[j])
      end
    end
    redis.call('ZREM', KEYS[10], unpack(done))
    looked = looked + #done
    budget = budget - #done
  end
  -- b. the line beyond scan, in ticket order: the absent are passed over
  -- (scan moves past them, so no later run looks at them again), the
  -- present admitted; the walk stops at the first present user once n are
  -- admitted. A full room's runs (n = 0) walk too: the absent at the front
  -- are passed over before a slot frees, and the first free slot goes to
  -- the first present user.
  local size = math.min(n - #admitted + 16, PAGE)
  local fresh = {} -- the users admitted from the line, their tickets read after
  while budget > 0 do
    local users = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. scan, '+inf', 'LIMIT', 0, math.min(budget, size))
    if #users == 0 then break end
    local due = redis.call('ZMSCORE', KEYS[7], unpack(users))
    local last, stop = 0, false
    for j = 1, #users do
      local absent = due[j] and tonumber(due[j]) < now
      if not absent and #admitted + #fresh == n then
        stop = true
        break
      end
      last = j
      if not absent then fresh[#fresh + 1] = users[j] end
    end
    if last > 0 then
      scan = tonumber(redis.call('ZSCORE', KEYS[2], users[last]))
      looked, budget = looked + last, budget - last
    end
    if stop then break end
    size = PAGE
  end
  if #fresh > 0 then
    local ts = redis.call('ZMSCORE', KEYS[2], unpack(fresh))
    for j = 1, #fresh do
      admitted[#admitted + 1] = fresh[j]
      tickets[#tickets + 1] = tonumber(ts[j])
    end
  end
  if scan ~= scanBefore then
    redis.call('HSET', KEYS[5], 'scan', scan)
  end
  if #admitted > 0 then
    redis.call('ZREM', KEYS[2], unpack(admitted))
    -- everyone still waiting below the last admitted was passed over
    local last = tickets[#tickets]
    passed = redis.call('ZCOUNT', KEYS[2], '-inf', '(' .. last)
    if last > top then
      passedNew = redis.call('ZCOUNT', KEYS[2], '(' .. top, '(' .. last)
    end
  end
elseif n > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[2], n)
  for i = 1, #popped, 2 do
    admitted[#admitted + 1] = popped[i]
    tickets[#tickets + 1] = tonumber(popped[i + 1])
  end
  if #admitted > 0 then
    redis.call('ZREM', KEYS[10], unpack(admitted))
  end
end

if passedNew > 0 then
  redis.call('HINCRBY', KEYS[5], 'passed', passedNew)
end
if #admitted > 0 then
  local deadline = now + ttl
  for k = 1, #admitted do
    local user = admitted[k]
    redis.call('HSET', KEYS[4], user, ARGV[6 + k])
    redis.call('ZREM', KEYS[7], user)
    redis.call('ZADD', KEYS[3], deadline, user)
    if tickets[k] > top then top = tickets[k] end
  end
  redis.call('HINCRBY', KEYS[5], 'admitted', #admitted)
  active = active + #admitted
  waiting = waiting - #admitted
end

-- serving moves up to the first ticket still waiting (or to top when
-- nobody waits); admitted tickets above it are departures for positions
local serving = top
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if first[2] then serving = math.min(top, tonumber(first[2]) - 1) end
if serving < servingBefore then serving = servingBefore end
for k = 1, #tickets do
  if tickets[k] > serving then
    redis.call('ZADD', KEYS[6], tickets[k], tickets[k])
    left[#left + 1] = tickets[k]
  end
end
local moved = serving ~= servingBefore
if moved or #admitted > 0 then
  redis.call('HSET', KEYS[5], 'serving', serving, 'top', top)
end
if moved then
  -- departures at or below the new serving ticket no longer affect any position
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', serving)
end

-- 3. measure the admission rate over busy time only (time with people
-- waiting and the room open), so a quiet room does not look slow.
local st = redis.call('HMGET', KEYS[5], 'last_ms', 'busy_ms', 'busy_n', 'rate')
local last = tonumber(st[1])
local busy = tonumber(st[2]) or 0
local busyN = tonumber(st[3]) or 0
local rate = tonumber(st[4]) or 0
if last and waitingBefore > 0 and not held then
  local dt = now - last
  if dt > 1000 then dt = 1000 end
  if dt > 0 then
    busy = busy + dt
    busyN = busyN + #admitted
  end
end
local window = tonumber(ARGV[3])
if busy >= window then
  local measured = busyN * 1000 / busy
  if rate > 0 then rate = (rate + measured) / 2 else rate = measured end
  busy = 0
  busyN = 0
end
local rateStr = string.format('%.3f', rate)
redis.call('HSET', KEYS[5], 'last_ms', now, 'busy_ms', busy, 'busy_n', busyN, 'rate', rateStr)

-- 4. one event per tick that changed anything: {room, ev, ts, serving,
-- admitted, left, waiting, active, rate, pruned}; left: the tickets dropped
-- as idle and those admitted above serving (past a passed-over user). ev numbers the room's events so
-- a subscriber can tell it missed one. A change of the waiting total alone
-- (enters since the last event: enters publish nothing but a room's first
-- arrival) is one too, so that every instance's total trails the newest
-- enter by at most one tick; pub_waiting is the total last published here.
local published = tonumber(redis.call('HGET', KEYS[5], 'pub_waiting') or '-1')
if #admitted > 0 or pruned > 0 or #left > 0 or moved or waiting ~= published then
  redis.call('HSET', KEYS[5], 'pub_waiting', waiting)
  local ev = {room = ARGV[2], ts = now, waiting = waiting, active = active,
              rate = rateStr, pruned = pruned,
              ev = redis.call('HINCRBY', KEYS[5], 'ev', 1),
              serving = serving}
  if #admitted > 0 then
    ev.admitted = admitted
  end
  if #left > 0 then
    ev.left = left
  end
  redis.call('PUBLISH', ARGV[1], cjson.encode(ev))
end

local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
local nextDeadline = tonumber(first[2] or '0')
return {#admitted, waiting, active, want, pruned, rateStr, target, paused and 1 or 0, admitted, abandoned, due and 1 or 0,
        prequeued, nextDeadline, opensAt or 0, passed, passedNew, pm == 'armed' and 1 or (pm and 2 or 0),
        cfg[6] == 'adaptive' and 1 or 0, looked}
