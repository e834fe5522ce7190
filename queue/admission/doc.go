// Package admission runs the waiting room's admission loop: one Admitter
// per instance (admitter.go) admits the users of the rooms it runs, with
// the queue's admission script (queue.Queue.Admit), and opens them when
// their opening time comes (queue.Queue.Open, or Merge for a sharded
// pre-queue).
//
// Cost follows work: a room is run only while it has work (someone
// waiting, pre-queued or admitted), every tick while anyone waits and at
// its next deadline otherwise. A room without work joins the runs when
// woken by one of its events (Wake) — at once, not at the next tick, and
// at most once per WakeGap — or found busy by a sweep: at the
// start, every SweepEvery, when the event subscription comes back
// (Resweep) and when the live instances change. With package
// members the live instances share the rooms, each room run by one of
// them; the admission script stays atomic, so two instances running a
// room at once during a hand-over never admit beyond its target.
//
// The configured rooms (Options.Rooms) and the stored ones (Options.Stored,
// the admin API's) are created whenever they are missing, even after
// Redis lost its data. Adaptive rooms pass a Gate (adaptive.PoolGate) that
// bounds each tick's admissions by what the downstream takes now.
//
// Concurrency: Wake, Resweep and Running are safe for concurrent use; Run
// runs until its context is done, Tick is one step of it on the caller's
// goroutine. The package builds on queue's exported API alone: the rooms
// (Rooms, HasRooms, Busy, EnsureRoom) and one script per step (Admit,
// Open, Merge).
package admission
