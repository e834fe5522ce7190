package queue

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RoomSnapshot is what an instance needs to derive every waiting user's
// position from their ticket alone: position(t) = t − Serving − |{g ∈ Gone :
// Serving < g < t}| (see stream/doc.go).
type RoomSnapshot struct {
	Room    string
	Serving int64   // every ticket at or below it no longer waits (the last admitted, unless someone was passed over)
	Ev      int64   // the room's event sequence number at the time of reading
	Waiting int64   // queue length
	Rate    float64 // measured admissions per second (0: not yet measured)
	Target  int64
	Flow           // what the ETA is estimated from (queue/estimate)
	Closed  bool   // the method is reject: waiting users see CLOSED
	Sched   int64  // schedule number: grows at each opening and config event
	Paused  bool   // the room is paused: nobody is admitted
	Message string // the operator's message to waiting users ("": none)
	// Expected is what the ETA stands on until the room has measured.
	Expected Expectation
	Gone     []int64 // tickets above Serving no longer waiting (left, dropped, admitted past a passed-over user), ascending
	// GoneCount is how many tickets above Serving have left: len(Gone)
	// when they were sent.
	GoneCount int64
	// GoneOmitted: Gone was not sent (it is nil) because the caller's
	// GoneHeld matched the room: the list the caller holds is the room's.
	GoneOmitted bool
}

// GoneHeld is what a reader already holds of a room's departed tickets,
// so that a snapshot need not send them again (SnapshotsSince): Count
// tickets above Serving, derived without a gap up to event Ev (a confirmed
// snapshot, then every event after it in order). Every script that changes
// the departed tickets above serving bumps the room's ev in the same call,
// so such a list is the room's exactly while the room's ev is Ev; Serving
// and Count are checked as well, cheaply, against an ev that does not
// witness a change (a Redis that lost writes and counted up again). The
// zero GoneHeld (Known false) holds nothing: the list is sent.
type GoneHeld struct {
	Known   bool
	Ev      int64
	Serving int64
	Count   int64
}

// Snapshots reads the snapshot of each room, one atomic script per room,
// all rooms in one pipeline, each with its departed tickets. A missing
// room reads as an empty snapshot.
func (q *Queue) Snapshots(ctx context.Context, rooms []string) ([]RoomSnapshot, error) {
	return q.SnapshotsSince(ctx, rooms, nil)
}

// SnapshotsSince reads the snapshots of rooms like Snapshots, except that a
// room's departed tickets are left out (GoneOmitted) when held[i] matches
// the room: reading them costs Redis O(n) per room and read (tens of ms
// at 150,000), and a hub that follows the room's events already holds
// them. held may be nil or shorter than rooms: those rooms hold nothing.
func (q *Queue) SnapshotsSince(ctx context.Context, rooms []string, held []GoneHeld) ([]RoomSnapshot, error) {
	cmds := make([]*redis.Cmd, len(rooms))
	err := q.pipelineScript(ctx, snapshotScript, func(p redis.Pipeliner) {
		for i, room := range rooms {
			k := q.keys(room)
			var args []any
			if i < len(held) && held[i].Known {
				args = []any{held[i].Ev, held[i].Serving, held[i].Count}
			}
			cmds[i] = snapshotScript.EvalSha(ctx, p, []string{k.stats, k.queue, k.gone, k.cfg, k.active,
				q.RoomKey(room, MeasuredKey)}, args...)
		}
	})
	if err != nil {
		return nil, unavailable("snapshot", err)
	}
	out := make([]RoomSnapshot, len(rooms))
	for i, c := range cmds {
		s, err := decodeSnapshot(rooms[i], c.Val())
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// decodeSnapshot reads the snapshot script's reply for room.
func decodeSnapshot(room string, v any) (RoomSnapshot, error) {
	r := asReply("snapshot", v)
	s := RoomSnapshot{Room: room, Serving: r.int(0), Ev: r.int(1), Waiting: r.int(2), Rate: r.float(3), Target: r.int(4),
		Closed: r.int(5) == 1, Sched: r.int(6), Paused: r.int(11) == 1, Message: r.str(12)}
	next := 0
	s.Flow, next = r.flow(7)
	s.Expected, next = r.expectation(next)
	s.Flow.Passed, s.Flow.PassedWaiting, next = r.int(next), r.int(next+1), next+2
	s.GoneCount, s.GoneOmitted = r.int(next), r.int(next+1) == 0
	if n := len(r.v) - next - 2; !s.GoneOmitted && r.err == nil && n > 0 {
		s.Gone = make([]int64, 0, n)
		for j := next + 2; j < len(r.v); j++ {
			s.Gone = append(s.Gone, r.int(j))
		}
	}
	if r.err != nil {
		return RoomSnapshot{}, r.err
	}
	slices.Sort(s.Gone)
	return s, nil
}

// expectation reads a snapshot's Expectation from i on: the expected
// order time (ms), the last hold (ms), no-show share and absent share (”
// when never measured; the absent share also when measured before it was
// kept); it returns the index after them.
func (r *reply) expectation(i int) (Expectation, int) {
	e := Expectation{Order: time.Duration(r.int(i)) * time.Millisecond}
	hold, noShow, absent := r.str(i+1), r.str(i+2), r.str(i+3)
	if r.err != nil || hold == "" || noShow == "" {
		return e, i + 4
	}
	h, errH := strconv.ParseInt(hold, 10, 64)
	p, errP := strconv.ParseFloat(noShow, 64)
	if errH == nil && errP == nil && h > 0 && p >= 0 && p <= 1 {
		e.LastHold, e.LastNoShow, e.LastKnown = time.Duration(h)*time.Millisecond, p, true
		if a, err := strconv.ParseFloat(absent, 64); err == nil && a >= 0 && a <= 1 {
			e.LastAbsent, e.LastAbsentKnown = a, true
		}
	}
	return e, i + 4
}

// Flow is what a room's ETA is estimated from (see queue/estimate): its
// all-time counters, its slots, and its entry window.
type Flow struct {
	Admitted int64 // users admitted
	Expired  int64 // admissions whose window ended unused (no-shows)
	// Departed counts the waiting users who left or were dropped as idle,
	// except those the admission had passed over (counted in Passed).
	Departed int64
	// Passed counts the absent users the admission passed over, each once
	// (presence-aware admission); PassedWaiting is how many of them wait
	// still (a ticket at or below the highest admitted): they are in
	// everyone's position behind them, and nobody waits for them.
	Passed, PassedWaiting int64
	// Holds counts the slots freed by an order that ended, and HoldTime is
	// their total time from admission to release.
	Holds    int64
	HoldTime time.Duration
	EntryTTL time.Duration // the room's entry window
	Active   int64         // slots held
	// Remaining[i] counts the active slots whose deadline is i…i+1 Bins
	// away (the first also those past it, the last all beyond).
	Remaining []int64
	Bin       time.Duration
}

// Statuses reads the status of several users of one room in one pipeline.
// errs[i] is ErrNotInQueue for users neither waiting nor READY.
func (q *Queue) Statuses(ctx context.Context, room string, users []string) ([]Status, []error, error) {
	k := q.keys(room)
	cmds := make([]*redis.Cmd, len(users))
	err := q.pipelineScript(ctx, statusScript, func(p redis.Pipeliner) {
		for i, u := range users {
			cmds[i] = statusScript.EvalSha(ctx, p, q.statusKeys(k), u)
		}
	})
	if err != nil {
		return nil, nil, unavailable("statuses", err)
	}
	sts := make([]Status, len(users))
	errs := make([]error, len(users))
	for i, c := range cmds {
		sts[i], errs[i] = decodeStatus(c.Val())
	}
	q.resolveParts(ctx, room, users, sts, errs)
	return sts, errs, nil
}

// pipelineScript runs the EVALSHA calls that fill adds to one pipeline.
// On a Redis that does not know the script yet (NOSCRIPT: first use, or
// after a restart) it loads it and runs the pipeline once more.
func (q *Queue) pipelineScript(ctx context.Context, s *redis.Script, fill func(redis.Pipeliner)) error {
	run := func() error {
		_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { fill(p); return nil })
		return err
	}
	err := run()
	var re redis.Error
	if err != nil && errors.As(err, &re) && redis.HasErrorPrefix(re, "NOSCRIPT") {
		if err = s.Load(ctx, q.rdb).Err(); err == nil {
			err = run()
		}
	}
	return err
}
