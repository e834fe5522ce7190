// Package queue owns the waiting room's Redis model: the per-room FIFO
// queue, atomic admission, one-time entry tokens, gateway sessions, the
// room configuration (method, opening time, pause, message), the paging
// and deletion of rooms, and the typed events its scripts publish.
//
// Every mutation is one Lua script (scripts/*.lua, each with a header
// naming its KEYS, ARGV and reply), so the model holds with any number of
// app instances and concurrent callers. Every key of a room is built by
// RoomKey under the hash tag {room}, so each script touches one Redis
// Cluster slot; packages that keep state beside a room build theirs with
// RoomKey too. Time inside scripts is Redis's TIME, never an instance's
// clock. Events (event.go) are the contract with the subscribers: Event
// the typed form, Events the one subscription; the wire is not exported.
//
// Admission is bounded per run whatever the length of the line: with
// presence-aware admission (Options.Grace) the runs share a cursor past
// the absent, each looked at once per absence, and a run looks at no more
// than the users it may admit plus 10,000 (scripts/admit.lua,
// AdmitResult.Looked). The loop that runs it for the rooms with work is
// package queue/admission.
//
// The sharded pre-queue (prequeueParts > 1) spreads a hot room's arrivals
// before its opening over parts on slots of their own: their layout and
// the setting in prequeue.go, a user in a part in prequeue_parts.go, the
// opening's merge in prequeue_merge.go (docs/sharded-prequeue.md).
//
// A Queue is safe for concurrent use; Events runs on its caller's
// goroutine until its context is done. Scripts' jobs, openings in slices,
// the bulk enter, what is exported for whom: docs/design.md.
package queue
