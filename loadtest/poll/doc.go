// Package poll is the poll scenario: the poll path's throughput against a
// yardstick, in one run. It freezes the room's admission (targetActive 0,
// restored at the end), logs in and enters --users (50) users, and drives
// GET position with --conns (64) closed-loop connections for --duration
// (10s): first against the server, then against a plain Fiber JSON handler
// whose body is the same size, run in-process or, with --baseline-process,
// in a process of its own as the server runs (the command started again as
// PlainHandlerCmd). It reports req/s, p50 and p99 of each and their ratio
// (the bar: ≥ 0.5), then login (BCrypt) throughput with --login-conns (4)
// for --login-duration (3s), and the per-request cost ratio (1/login rps) ÷
// (1/poll rps): what a poll cost in the seed, which ran BCrypt on every
// poll, over what it costs here. The closed loop wants the server with
// WR_RATE_LIMITS=off, so that layer 1 does not answer for the poll path.
//
// --enter adds POST enter against a yardstick of enter's body size, for
// users already waiting (the pollers again) and fresh users (new ids from
// --enter-first-id, minted: --mint-tokens). --mode open replaces the closed
// loop by the crowd as it polls: each of --users polls pollAfterMs after
// its answer (Retry-After after a 429), first within --spread (5s), for
// --duration; run it with the limits on to see what they cost as they
// would occur. --redis URL reads Redis's INFO before and after each
// measured server phase and reports round trips, commands, scripts and
// Redis CPU per request; each server phase also reports the server's CPU
// per answer (process_cpu_seconds_total).
//
// --limit (closed loop; --mint-tokens and --redis, the server's Redis)
// measures, one after another at --conns connections: (a) the plain
// handler, (b) the floor — the plain handler making one EVALSHA (ZADD NX
// + ZRANK on a key of its own) on the server's Redis per request — (c)
// enter for users already waiting, (d) the poll at the front, (b) and (a)
// again, then enter for fresh users (last: the background work a room of
// a hundred thousand more users costs would land on what followed); it
// prints one table of rates, p50/p99
// and each path's ratio to both yardsticks (the mean of their two runs).
// Both yardsticks run in processes of their own. --cpu-profile FILE saves
// the server's CPU profile over the fresh-enter phase. make bench-http
// runs it on a server and Redis of its own.
package poll
