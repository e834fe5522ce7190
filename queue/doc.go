// Package queue owns the waiting room's Redis model: the per-room FIFO queue,
// atomic admission, one-time entry tokens and the room configuration.
//
// Every mutation is one Lua script (scripts/*.lua, each with a header naming
// its KEYS, ARGV and reply), so the model holds with any number of app
// instances and any number of concurrent callers:
//
//   - enter takes a ticket from a Redis-side INCR and adds the user with
//     ZADD NX: re-entering keeps the first place;
//   - admit prunes expired admissions, computes capacity = target - active,
//     pops that many users in ticket order, stores their entry tokens
//     (generated in Go, passed as ARGV), records them active and publishes one
//     event, all atomically: active never exceeds target and nobody is popped
//     without a token;
//   - consume spends an entry token with compare-then-delete, bound to its user;
//     release frees the slot when the order ends; restore gives the token back
//     after an infrastructure failure;
//   - a room has a method (fifo, random, passthrough, reject) and may have an
//     opening time: arrivals before it wait in a pre-queue without a ticket;
//     the first admission run at or after it (Redis TIME) reports the room
//     due and the open script turns the pre-queue into the queue at once —
//     shuffled with a seed drawn then and recorded (random; Permutation
//     reproduces it) or in arrival order — giving fresh contiguous tickets
//     and publishing one "open" event. It is idempotent: concurrent runs
//     find the pre-queue empty.
//
// All keys of a room share the hash tag {room}, so each script touches one
// Redis Cluster slot. Time inside scripts is Redis's TIME, never an app
// instance's clock.
//
// Concurrency: a Queue is safe for concurrent use. The Admitter runs one
// admission loop per instance; run as many instances as you like. The
// sub-package loop holds the periodic-loop helper every package uses (it
// sits here, at the bottom of the import graph, so that all can import it).
package queue
