-- gcra: one rate-limit decision (generic cell rate algorithm).
--
-- KEYS[1] the limit's key for one subject; holds the theoretical arrival
--         time (TAT) in microseconds of Redis's clock
-- ARGV[1] emission interval T in microseconds (period ÷ rate)
-- ARGV[2] burst: how many requests may arrive at once (>= 1)
--
-- Returns {allowed (0|1), retry_after_us}: when refused, the exact wait
-- until one request would be allowed. Redis TIME is the clock, so every
-- app instance shares one limit and no instance's clock matters.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then
  tat = now
end
local newTat = tat + interval
local allowAt = newTat - burst * interval
if now < allowAt then
  return {0, allowAt - now}
end
redis.call('SET', KEYS[1], newTat, 'PX', math.ceil((newTat - now) / 1000) + 1)
return {1, 0}
