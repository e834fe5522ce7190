// Package adaptive owns adaptive admission: the order signals every
// instance records, the per-room windows of them in Redis, the limit rule
// and the controller that sets an adaptive room's targetActive from them.
//
// Every instance records its orders and its database pool's use in memory
// (Recorder), and the instance that runs a room (admission.Admitter) records
// each admission run's active count; Recorder.Run flushes them about once
// a second into per-room, per-window hashes, one pipeline per flush, so
// the order path never waits on Redis for it. Half a window after each
// window ends, the instance running the room (Options.Running) takes the
// room's lease for that window, reads the window and, when the room is
// adaptive, writes the new targetActive (scripts/adapt.lua, which leaves
// an operator's change made meanwhile alone). The rule (NextLimit) is a
// pure function. Keys are built in keys.go under the room's hash tag.
//
// The rule converges on the downstream's capacity. By Little's law a
// pool of P connections each held h per order sustains P ÷ h orders a
// second, and an admitted user holds a slot for the time outside the
// database (being told, thinking) plus the order. Per window the signals
// give the pool's utilization U (connection time held ÷ available), the
// mean number of acquires queued Q (their total wait ÷ the window) and
// the room's mean active count A. A − Q slots did useful work and kept
// the pool U busy, so 0.95 × (A − Q) ÷ U slots keep it 95 % busy with
// nobody queued: what the limit moves to. This needs no memory of a
// healthy latency, so it follows the database both ways. Cuts are taken
// at once; growth is at most ×2 a window and only while the limit bound
// (users were left waiting), since an unused limit says nothing.
//
// Failure modes: a slow database raises h, so U is 1 and Q grows; the
// next window cuts to the pool's capacity (not to a latency ratio). A
// dead one fails orders fast and looks idle: an error rate above 2 %
// cuts ×0.8 before the capacity is read, and the limit does not grow
// while errors last. A cold cache is a slow database that speeds up: U
// falls as it warms and the limit regrows ×2 a window, with no baseline
// of the cold period to unlearn. A hot row, or a database on a saturated
// CPU, makes h grow with concurrency (orders hold connections while
// waiting for the row's lock or the CPU): more slots raise U and the
// queue, not throughput, and one window's capacity overshoots. Guard
// remembers the step before: a growth after which the mean hold rose by
// half the growth's ratio, and the orders barely, goes back and caps
// growth there for 15 windows; a pool_wait cut caps it below the limit
// that queued for 5, and under a cap growth is at most ×1.25; the window
// right after a cut, read while the users admitted before it drain,
// grows nothing; and a limit the room fills to less than 0.8 does not
// grow (its slack is what bursts onto the pool when the database slows).
// A p90 above the ceiling cuts ×0.8 too. Without pool figures (gateway
// mode, where only the origin's latency is known) the rule falls back to
// a gradient on latency against a long-run baseline. Limits: a pool shared by several rooms counts whole for each
// of them, and stock sold out ends orders fast as healthy answers.
//
// The pool gate (PoolGate, gate.go) is the fast half. The limit bounds
// how many users hold a slot; the gate bounds, every admission tick, how
// many of them may be admitted now: gain × the pool's free connections,
// at most 1.1 × what the pool completes in a tick. Users told over SSE
// or WebSocket order within milliseconds, so a tick that admits more
// than the pool has free queues them for a connection, and polling users
// who learn of their turn seconds later fill slots while the pool idles.
// Together these make a 3–4 s cycle that no window's step can follow.
// The gain learns how many admissions fill a free connection: it falls
// when acquires wait and rises when the gate bound with the pool under
// 90 % busy. Behind the gate the capacity rule cuts the limit only while
// acquires still queue (Rule.Gate), since a lower limit would leave its
// slots to users still on their way. The gate reads this instance's
// pool only; with several instances behind one balancer, the gain
// stands for the other pools too (to ×8).
//
// The operator stays in charge: a fixed room's target never moves (its
// signals are still kept), a room's minActive/maxActive bound the rule,
// a limit of 0 holds, and every change is logged and counted by reason.
//
// Concurrency: a Recorder and a Controller are safe for concurrent use.
// Recorder.Run and Controller.Run are the package's two loops; each runs
// on the caller's goroutine until its context is done (the caller owns it
// and waits for it). The lease lets one instance act per room and window.
// The windows, the lease and the keys: docs/design.md, "Adaptive
// admission: signals and the lease".
package adaptive
