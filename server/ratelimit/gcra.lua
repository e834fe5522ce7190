-- gcra: rate-limit decisions (generic cell rate algorithm) on one or more
-- keys at once, atomically. Every key holds the theoretical arrival time
-- (TAT) of its subject in microseconds of Redis's clock; Redis TIME is the
-- clock, so every app instance shares one limit and no instance's clock
-- matters. With several keys they must share one hash slot (Redis Cluster).
--
-- KEYS[1..n] one key per limit and subject
-- ARGV[1]    mode:
--              take   if EVERY key allows one request, record one on each;
--                     else record nothing (all or nothing)
--              peek   decide as take would, record nothing
--              charge record one on each key whatever it allows, saturating:
--                     a TAT never goes past the last one an allowed request
--                     could leave (now + burst × interval), so an exhausted
--                     limit recovers one interval after charges stop
--              refund give one request back on each key (a reservation
--                     taken by take that turned out not to count)
-- ARGV[3k-1], ARGV[3k], ARGV[3k+1] (k = 1..n): emission interval T in
--            microseconds (period ÷ rate), burst (>= 1), and record (0|1)
--            of KEYS[k]; a key with record 0 takes part in the decision
--            but is never written, whatever the mode
--
-- Returns a flat array of 3 integers per key, in KEYS order:
--   allowed (0|1)   whether one request would be allowed (before this call)
--   retry_after_us  when refused, the exact wait until one would be
--   debt_us         TAT − now before this call, >= 0: how far the subject
--                   is in debt; > 0 means it has recorded requests not yet
--                   paid back by the passing of time
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local mode = ARGV[1]
local out = {}
local tats, news, intervals, records = {}, {}, {}, {}
local all = true
for i = 1, #KEYS do
  local interval = tonumber(ARGV[3 * i - 1])
  local burst = tonumber(ARGV[3 * i])
  records[i] = ARGV[3 * i + 1] == '1'
  local tat = tonumber(redis.call('GET', KEYS[i]) or now)
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
for i = 1, #KEYS do
  if records[i] then
    if (mode == 'take' and all) or mode == 'charge' then
      set(KEYS[i], news[i])
    elseif mode == 'refund' then
      set(KEYS[i], tats[i] - intervals[i])
    end
  end
end
return out
