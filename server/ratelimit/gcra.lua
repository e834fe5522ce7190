-- gcra: decides the limits of KEYS[1..n] (gcra_lib.lua, prepended).
-- ARGV[1] mode; ARGV[2..] 3 per key. Returns the flat reply of gcra.
return (gcra(ARGV[1], 1, 2, #KEYS))
