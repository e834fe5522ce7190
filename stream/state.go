package stream

import (
	"time"

	"waitingroom/queue"
	"waitingroom/queue/estimate"
)

// roomState is one room's state as this instance knows it. Values are
// immutable once published; updates make a new one.
type roomState struct {
	room    string
	serving int64   // every ticket ≤ serving no longer waits
	gone    goneSet // tickets > serving no longer waiting (left, dropped, admitted past an absent user)
	waiting int64
	rate    float64
	target  int64
	fc      estimate.Forecast // the wait estimate, made at each resync
	ev      int64
	closed  bool      // method reject: waiting users see CLOSED
	sched   int64     // schedule number: pre-queue streams re-read when it grows
	paused  bool      // the room is paused: waiting users are told, ETA withheld
	message string    // the operator's message to waiting users ("": none)
	ts      time.Time // when the last change was published (Redis clock)
	seen    time.Time // when this instance applied the last event (its clock)

	stale      bool      // an event may be missing: re-read before trusting
	snapshotAt time.Time // when Redis last confirmed this state
}

// position derives the 1-based position of ticket t. ok is false when t is
// no longer waiting (admitted, or left) and Redis must tell what it is.
func (s *roomState) position(t int64) (pos int64, ok bool) {
	if t <= s.serving {
		return 0, false
	}
	below, left := s.gone.rank(t)
	if left {
		return 0, false
	}
	return t - s.serving - int64(below), true
}

// status returns the waiting status of ticket t at position pos.
func (s *roomState) status(t, pos int64) queue.Status {
	// The total may trail a user who entered after the last event or read.
	st := queue.Status{State: queue.Waiting, Ticket: t, Position: pos, Waiting: max(s.waiting, pos), Rate: s.rate, Target: s.target,
		Paused: s.paused, Message: s.message}
	if s.closed {
		st.State = queue.Closed
	}
	return st
}

// goneHeld is what a snapshot read may take as this state's departed
// tickets (queue.GoneHeld): nothing when there is no state or it may have
// missed an event (stale), as its list may then be wrong.
func (s *roomState) goneHeld() queue.GoneHeld {
	if s == nil || s.stale {
		return queue.GoneHeld{}
	}
	return queue.GoneHeld{Known: true, Ev: s.ev, Serving: s.serving, Count: int64(s.gone.len())}
}

// fromSnapshot builds a confirmed state with the forecast made from it.
// When the snapshot left the departed tickets out, they are those of held,
// the state whose goneHeld the read was given; ok is false when held does
// not match the snapshot (then it cannot be used).
func fromSnapshot(sn queue.RoomSnapshot, held *roomState, fc estimate.Forecast, now time.Time) (s *roomState, ok bool) {
	gone := goneSet{base: sn.Gone}
	if sn.GoneOmitted {
		h := held.goneHeld()
		if !h.Known || h.Ev != sn.Ev || h.Serving != sn.Serving || h.Count != sn.GoneCount {
			return nil, false
		}
		gone = held.gone
	}
	return &roomState{
		room: sn.Room, serving: sn.Serving, gone: gone, waiting: sn.Waiting,
		rate: sn.Rate, target: sn.Target, fc: fc, ev: sn.Ev, ts: now, snapshotAt: now,
		closed: sn.Closed, sched: sn.Sched, paused: sn.Paused, message: sn.Message,
	}, true
}

// apply returns the state after event e. It is marked stale when e does not
// directly follow the state's last event.
func (s *roomState) apply(e queue.Event) *roomState {
	n := *s
	n.stale = s.stale || s.ev == 0 || e.Ev != s.ev+1
	if e.Ev > n.ev {
		n.ev = e.Ev
	}
	n.ts = e.At
	n.waiting = e.Waiting
	if e.Rate != nil {
		n.rate = *e.Rate
	}
	if e.Serving > n.serving {
		n.serving = e.Serving
	}
	if e.Sched > n.sched {
		n.sched = e.Sched
	}
	if e.Closed != nil {
		n.closed = *e.Closed
	}
	if e.Paused != nil {
		n.paused = *e.Paused
	}
	if e.Message != nil {
		n.message = *e.Message
	}
	// Both cost O(log n) unless someone left (see goneSet).
	n.gone = s.gone.above(n.serving).with(e.Left, n.serving)
	return &n
}
