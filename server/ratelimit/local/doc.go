// Package local decides rate limits in this process's memory, with the
// same GCRA as package ratelimit (one theoretical arrival time per
// subject), for a limit that must cost no Redis round trip: the poll pace.
// A poll answered from the hub's memory then touches Redis not at all.
//
// The price is that each instance counts on its own. A client that spreads
// a refresh storm over N instances (a load balancer without affinity
// sends its polls round-robin) gets up to N times the pace and N bursts;
// the limits that protect shared work — login, enter, orders — stay in
// Redis, shared by every instance (package ratelimit).
//
// Memory is bounded. A subject whose theoretical arrival time has passed
// is indistinguishable from one never seen, so it is forgotten: each shard
// sweeps such entries when it has doubled since its last sweep, and a
// subject is remembered for at most burst × interval after its last
// allowed request (12.5 s at the slowest default poll band). Beyond
// Options.MaxSubjects, new subjects are decided as if fresh and not
// recorded (fail open, as the poll limit does when Redis cannot decide);
// subjects already remembered keep their debt, so flooding with new
// subjects frees no one.
//
// Concurrency: a Limiter is safe for concurrent use; subjects are spread
// over 64 shards, each with its own lock.
package local
