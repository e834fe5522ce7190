-- gcra_lib: rate-limit decisions (generic cell rate algorithm) on one or
-- more keys at once, atomically. Every key holds the theoretical arrival
-- time (TAT) of its subject in microseconds of Redis's clock; Redis TIME is
-- the clock, so every app instance shares one limit and no instance's
-- clock matters. With several keys they must share one hash slot (Redis
-- Cluster).
--
-- This file defines one local function, gcra(mode, k0, a0, n): a decision
-- on the n keys KEYS[k0 .. k0+n-1] with their arguments from ARGV[a0]. The
-- scripts that use it append their own call: gcra.lua decides on all of
-- its keys; a script of another package may decide first on keys appended
-- after its own and go on only when they allow (Limiter.Inline), so that a
-- request costs one script instead of two.
--
-- mode:
--   take   if EVERY key allows one request, record one on each; else
--          record nothing (all or nothing)
--   peek   decide as take would, record nothing
--   charge record one on each key whatever it allows, saturating: a TAT
--          never goes past the last one an allowed request could leave
--          (now + burst × interval), so an exhausted limit recovers one
--          interval after charges stop
--   refund give one request back on each key (a reservation taken by take
--          that turned out not to count)
-- ARGV[a0+3i-3], ARGV[a0+3i-2], ARGV[a0+3i-1] (i = 1..n): emission
--          interval T in microseconds (period ÷ rate), burst (>= 1), and
--          record (0|1) of the i-th key; a key with record 0 takes part in
--          the decision but is never written, whatever the mode
--
-- Returns a flat array of 3 integers per key, in KEYS order, and whether
-- every key allowed:
--   allowed (0|1)   whether one request would be allowed (before this call)
--   retry_after_us  when refused, the exact wait until one would be
--   debt_us         TAT − now before this call, >= 0: how far the subject
--                   is in debt; > 0 means it has recorded requests not yet
--                   paid back by the passing of time
local function gcra(mode, k0, a0, n)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local out = {}
  local keys, tats, news, intervals, records = {}, {}, {}, {}, {}
  local all = true
  for i = 1, n do
    local a = a0 + 3 * (i - 1)
    local interval = tonumber(ARGV[a])
    local burst = tonumber(ARGV[a + 1])
    keys[i], records[i] = KEYS[k0 + i - 1], ARGV[a + 2] == '1'
    local tat = tonumber(redis.call('GET', keys[i]) or now)
    if tat < now then
      tat = now
    end
    local newTat = tat + interval
    local allowAt = newTat - burst * interval
    local allowed, retry = 1, 0
    if now < allowAt then
      allowed, retry, all = 0, allowAt - now, false
    end
    if mode == 'charge' and newTat > now + burst * interval then
      newTat = now + burst * interval
    end
    tats[i], news[i], intervals[i] = tat, newTat, interval
    out[3 * i - 2], out[3 * i - 1], out[3 * i] = allowed, retry, tat - now
  end
  local function set(key, tat)
    if tat <= now then
      redis.call('DEL', key)
    else
      redis.call('SET', key, tat, 'PX', math.ceil((tat - now) / 1000) + 1)
    end
  end
  for i = 1, n do
    if records[i] then
      if (mode == 'take' and all) or mode == 'charge' then
        set(keys[i], news[i])
      elseif mode == 'refund' then
        set(keys[i], tats[i] - intervals[i])
      end
    end
  end
  return out, all
end
