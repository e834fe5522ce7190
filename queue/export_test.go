package queue

import "context"

// BatchWaiting is how many callers wait for a round trip of q's enter and
// status scripts (tests only).
func BatchWaiting(q *Queue) int { return q.batch.Waiting() }

// SetOpenSlice sets how many users one run of q's open script shuffles or
// moves, and how many runs one Open call makes (tests only: a small slice
// makes a small opening take many runs).
func SetOpenSlice(q *Queue, users, runsPerCall int) { q.openSlice, q.openRuns = users, runsPerCall }

// ParseEventForTest reads one event as published on a room's channel
// (tests only).
func ParseEventForTest(payload string) (Event, error) { return parseEvent(payload) }

// Merge phases MergeStep may stop after, as an instance that died there.
const (
	StopAfterSeal   = stopAfterSeal
	StopAfterTake   = stopAfterTake
	StopAfterAppend = stopAfterAppend
)

// MergeStep runs one step of room's sharded merge, stopping early after
// phase stop (-1: the whole step) (tests only).
func MergeStep(q *Queue, room, seed string, stop int) (OpenResult, error) {
	return q.mergeStep(context.Background(), room, seed, stop)
}
