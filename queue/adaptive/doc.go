// Package adaptive owns adaptive admission: the order signals every
// instance records, the per-room windows of them in Redis, the limit rule
// and the controller that sets an adaptive room's targetActive from them,
// and the pool gate that paces each admission tick.
//
// Every instance records its orders and its database pool's use in memory
// (Recorder), and the instance that runs a room (admission.Admitter)
// records each admission run's active count; Recorder.Run flushes them
// about once a second into per-room, per-window hashes, so the order path
// never waits on Redis. Half a window after each window ends, the instance
// running the room (Options.Running) takes the room's lease for that
// window, reads it and, when the room is adaptive, writes the new
// targetActive (scripts/adapt.lua). The rule (NextLimit) is a pure
// function; PoolGate (gate.go) bounds how many users a tick admits. Keys
// are built in keys.go under the room's hash tag. The operator stays in
// charge: a fixed room's target never moves, minActive/maxActive bound the
// rule, and every change is logged and counted by reason.
//
// Concurrency: a Recorder and a Controller are safe for concurrent use.
// Recorder.Run and Controller.Run are the package's two loops; each runs
// on the caller's goroutine until its context is done (the caller owns it
// and waits for it). The lease lets one instance act per room and window.
//
// Why the rule converges, how it fails safe, and the gate:
// docs/design.md, "Adaptive admission: signals and the lease".
package adaptive
