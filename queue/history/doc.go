// Package history owns the rooms' shared history: one point a second per
// room — waiting, active, targetActive, users admitted since the previous
// point and the measured admission rate — for the last hour, kept in Redis
// so that every instance and every operator's tab reads the same, and the
// ticket clock the longest current wait is read from.
//
// Every instance runs the loop (History.Run): shortly after each second
// it tries, for every room, to claim the current second of Redis's clock
// (scripts/claim.lua: one EVALSHA); the one caller that gets it reads the
// room (queue.Queue.Room and Snapshots) and appends the point
// (scripts/append.lua), so any number of instances record one point per
// second, in order, and a second no instance reached is simply missing.
// The list is trimmed to Keep points and the keys expire two hours after
// the last point.
//
// The ticket clock: the queue keeps a waiting user's ticket, not when it
// was issued. Rather than add a write to the enter path, the loop records
// which ticket had been issued by which second (only seconds in which the
// last ticket grew while someone waited; entries below the oldest waiting
// ticket are dropped), so the oldest waiting user's wait is known to the
// second from the moment the history runs (Waits). Tickets and the last
// ticket are derived from the room's snapshot (Serving, Waiting, Gone).
//
// Keys: "<prefix>{room}:history" (the points, a list of JSON arrays),
// "…:history:meta" (a hash) and "…:history:tickets" (a sorted set), built
// in keys.go by queue.RoomKey under the room's hash tag. Of the queue's
// keys it touches none: it reads rooms through the queue's methods.
//
// Concurrency: a History is safe for concurrent use. Run records on the
// caller's goroutine until its context is done.
//
// Imports: the standard library, go-redis, queue and queue/loop; never
// server or stream.
package history
