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
// clock. Events (event.go) are the queue's contract with its subscribers:
// Event is its typed form and Events the one subscription to every room's
// events; the wire format is not exported.
//
// Admission is bounded per run whatever the length of the line: with
// presence-aware admission (Options.Grace) the runs share a cursor past
// the users found absent, so each is looked at once per absence, and a
// run looks at no more than the users it may admit plus 10,000
// (scripts/admit.lua, AdmitResult.Looked).
//
// Concurrency: a Queue is safe for concurrent use, by any number of
// instances. Events runs on its caller's goroutine until its context is
// done. The admission loop that calls Admit and Open for the rooms with
// work is package queue/admission.
//
// Each script's job, openings in slices, the bulk enter and what is
// exported for whom: see docs/design.md, "The queue's Redis model".
package queue
