// Package history owns the rooms' shared history: one point a second per
// room — waiting, active, targetActive, users admitted since the previous
// point and the measured admission rate — for the last hour, kept in Redis
// so that every instance and every operator's tab reads the same, and the
// ticket clock the longest current wait is read from.
//
// Every instance runs the loop (History.Run); each second the one that
// claims that second of Redis's clock appends the point, so any number of
// instances record one point per second, in order. Its keys (history,
// history:meta, history:tickets) are built in keys.go by queue.RoomKey
// under the room's hash tag; of the queue's keys it touches none.
//
// Concurrency: a History is safe for concurrent use. Run records on the
// caller's goroutine until its context is done.
//
// The claim and the ticket clock: see docs/design.md, "The room history".
package history
