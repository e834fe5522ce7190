// Package adaptive owns adaptive admission: the order signals every
// instance records, the per-room windows of them in Redis, the limit rule
// and the controller that sets an adaptive room's targetActive from them.
//
// Every instance records its orders in memory (Recorder) and flushes them
// about once a second (Recorder.Run) into per-room, per-window hashes, one
// pipeline per flush, so the order path never waits on Redis for it. Half
// a window after each window ends, every instance's Controller tries to
// take the room's lease for that window; the one that gets it reads the
// window and, when the room is adaptive, writes the new targetActive into
// the room's configuration (scripts/adapt.lua). The rule itself
// (NextLimit, NextBaseline) is a pure function. The package owns the sig,
// lease and adaptive keys, built in keys.go by queue.RoomKey under the
// room's hash tag.
//
// Concurrency: a Recorder and a Controller are safe for concurrent use.
// Recorder.Run and Controller.Run are the package's two loops; each runs
// on the caller's goroutine until its context is done (the caller owns it
// and waits for it). Any number of instances run both: the lease lets one
// of them act per room and window.
//
// The windows, the lease and the keys in detail: see docs/design.md,
// "Adaptive admission: signals and the lease".
package adaptive
