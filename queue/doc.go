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
//     after an infrastructure failure.
//
// All keys of a room share the hash tag {room}, so each script touches one
// Redis Cluster slot. Time inside scripts is Redis's TIME, never an app
// instance's clock.
//
// Concurrency: a Queue is safe for concurrent use. The Admitter runs one
// admission loop per instance; run as many instances as you like.
package queue
