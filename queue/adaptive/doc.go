// Package adaptive owns adaptive admission: the order signals every
// instance records, the per-room windows of them in Redis, the limit rule
// and the controller that sets an adaptive room's targetActive from them.
//
// Every instance records its orders in memory (Recorder) and flushes them
// about once a second (Recorder.Run) into per-room, per-window hashes
// ("<prefix>{room}:sig:<window>": order count, error count, pool wait and a
// latency histogram with fixed buckets), one HINCRBY pipeline per flush, so
// the order path never waits on Redis for it. Windows are numbered by
// Unix time ÷ window on the instances' clocks; a skew of a few milliseconds
// moves a few samples into a neighbouring window, nothing more.
//
// Half a window after each window ends, every instance's Controller tries
// to take the room's lease for that window (SET NX PX on
// "<prefix>{room}:lease:<window>"); the one that gets it reads the window,
// folds its p90 into the baseline, stores the signals in
// "<prefix>{room}:adaptive" and, when the room is adaptive, writes the new
// targetActive into the room's configuration (scripts/adapt.lua; the
// admission script reads it every tick). Signals are kept for fixed rooms
// too, so switching a room to adaptive starts from a warm baseline. The
// rule itself (NextLimit, NextBaseline) is a pure function.
//
// Keys: all of a room's keys are built in keys.go by queue.RoomKey, under
// the room's hash tag, so adapt.lua touches one Redis Cluster slot. The
// package owns the sig, lease and adaptive keys; of the queue's keys it
// reads the room (queue.Queue.Room) and its script sets the target in the
// room's configuration hash (queue.ConfigKey), only while the room is
// adaptive and nobody changed the target meanwhile.
//
// Concurrency: a Recorder and a Controller are safe for concurrent use.
// Recorder.Run and Controller.Run are the package's two loops; each runs
// on the caller's goroutine until its context is done (the caller owns it
// and waits for it). Any number of instances run both: the lease lets one
// of them act per room and window.
//
// Imports: the standard library, go-redis, queue and queue/loop; never
// server or stream.
package adaptive
