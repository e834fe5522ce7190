// Package queue owns the waiting room's Redis model: the per-room FIFO queue,
// atomic admission, one-time entry tokens, the room configuration and the
// events its scripts publish.
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
//     without a token; it also drops waiting users unseen for the idle
//     timeout and remembers them for a day (the idle set), so Status can
//     answer ErrIdle instead of a bare ErrNotInQueue until they enter again;
//   - consume spends an entry token with compare-then-delete, bound to its user;
//     release frees the slot when the order ends; restore gives the token back
//     after an infrastructure failure (RestoreAtMost: a bounded number of
//     times, counted in a key per token that expires with its window, never
//     past that window);
//   - a gateway session (ConsumeSession) records its id, and optionally its
//     client network, in a hash per user beside the slot; hold keeps only
//     that session, paces it (GCRA in the same hash) and extends the slot
//     and the hash together; leave ends it;
//   - a room has a method (fifo, random, passthrough, reject) and may have an
//     opening time: arrivals before it wait in a pre-queue without a ticket;
//     the first admission run at or after it (Redis TIME) reports the room
//     due and the open script turns the pre-queue into the queue —
//     shuffled with a seed drawn then and recorded (random; Shuffle
//     reproduces it) or in arrival order — giving fresh contiguous tickets
//     and publishing one "open" event. It works in slices of at most
//     openSlice users per run, so a million-user opening never holds Redis
//     for more than one slice; admission holds until the last slice, and
//     newcomers meanwhile join the pre-queue behind. Concurrent runs share
//     the slices; the run that empties the pre-queue finishes the opening;
//   - what waiting users are told — the pause and the operator's message,
//     with the method and the opening time — is published as one "config"
//     event when it changes, and carried by every waiting status; a room's
//     display name and description are configuration only (RoomConfigs).
//
// All keys of a room share the hash tag {room}, so each script touches one
// Redis Cluster slot. Time inside scripts is Redis's TIME, never an app
// instance's clock.
//
// Keys: every key of a room is built by RoomKey ("<prefix>{room}:<name>");
// keys.go lists the queue's own. Packages that keep state beside a room
// build theirs with RoomKey too, so their scripts stay on the room's slot.
//
// Events: the admit, leave, open and schedule scripts publish one event per
// change of a room on the room's channel. The contract is the queue's
// (event.go): Event is its typed form and Events the one subscription to
// every room's events; subscribers (package stream) never see the wire
// format, which stays readable by both versions during a rolling deploy.
//
// Concurrency: a Queue is safe for concurrent use. The Admitter runs one
// admission loop per instance; run as many instances as you like. Events
// runs on its caller's goroutine until its context is done.
//
// Bulk enter: Enters runs many users' enter scripts in one pipeline (one
// round trip, each user still one atomic script). The HTTP path does not
// use it — it enters one user per request and shares round trips through
// queue/batch — but the load tool's ceiling scenario does, to drive one
// room's shard until Redis itself is the limit (BENCHMARKS.md, "Capacity
// model").
//
// Exports: what other packages use, and no more. Four names are used only
// by tests — Queue.Admit, Queue.Open and NewShuffleSeed (stream's and
// server's tests admit and open rooms at a moment of their choosing) and
// Admitter.Tick (queue's own external tests run one admission step of two
// admitters in turn) — and stay exported: each is the one-step form of
// what a loop does, and the tests are black-box on purpose. The channel
// names and the event parser are not exported: subscribers use Events.
//
// Imports: the standard library and go-redis; never another package of the
// project but queue/loop and queue/batch. Sub-packages:
//
//   - adaptive: adaptive admission (order signals, the limit rule and
//     controller, their keys, loops and script); imports queue and loop;
//   - batch: the scripts of concurrent callers in shared round trips (enter
//     and status here, rate-limit decisions in server/ratelimit); imports
//     only go-redis;
//   - loop: the periodic-loop helper every package uses (it sits here, at
//     the bottom of the import graph, so that all can import it); imports
//     only the standard library;
//   - queuetest: the real Redis of the tests, a fresh key prefix each.
package queue
