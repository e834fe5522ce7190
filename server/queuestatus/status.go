package queuestatus

import (
	"math"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/estimate"
)

// Doc is the contract's status document (position, enter, and the
// streams' status events).
//
// A paused room is said by "paused": true beside the status, which stays
// WAITING, PREQUEUE or CLOSED (clients that know only the statuses keep
// working): nobody is admitted and the place is kept. While paused the ETA
// is withheld: "etaKnown": false and no "etaSeconds" (see ETAKnown for the
// other times it is withheld). "message" is the
// operator's message to the room's waiting users. Both are absent when
// there is nothing to say, and neither is carried by READY.
type Doc struct {
	Status     string `json:"status"`
	Room       string `json:"room"`
	Position   int64  `json:"position,omitempty"`
	Waiting    int64  `json:"waiting,omitempty"`
	ETASeconds *int64 `json:"etaSeconds,omitempty"`
	// ETAKnown (WAITING only) says whether etaSeconds is given: the
	// estimate (package queue/estimate) is withheld — etaKnown false, no
	// etaSeconds — while the room is paused or closed, admits nobody, or
	// has not yet measured how long its orders take and how many admitted
	// users never order (about three order times after an opening) and
	// expects nothing (see ETAProvisional).
	ETAKnown *bool `json:"etaKnown,omitempty"`
	// ETAProvisional (WAITING, with etaSeconds only): the estimate stands
	// on what the room expects — the operator's expectedOrderSeconds, or
	// what the room measured in its last sale — because it has not yet
	// measured this sale's orders; absent once it has, and whenever the
	// estimate is withheld.
	ETAProvisional bool       `json:"etaProvisional,omitempty"`
	EntryToken     string     `json:"entryToken,omitempty"`
	EntryExpiresAt *time.Time `json:"entryExpiresAt,omitempty"`
	PollAfterMs    int64      `json:"pollAfterMs"`
	QueueToken     string     `json:"queueToken,omitempty"`
	// OpensAt and OpensInMs (PREQUEUE): the scheduled opening, and the time
	// left until it by the server's clock, so a countdown does not depend
	// on the client's clock.
	OpensAt   *time.Time `json:"opensAt,omitempty"`
	OpensInMs *int64     `json:"opensInMs,omitempty"`
	// Paused (WAITING, PREQUEUE, CLOSED): the room is paused.
	Paused bool `json:"paused,omitempty"`
	// Message (WAITING, PREQUEUE, CLOSED): the operator's message.
	Message string `json:"message,omitempty"`
}

// Docs turns a queue.Status into its document: the poll bands say when
// to poll again, the room's forecast the wait.
type Docs struct {
	Bands    Bands // the poll bands: pollAfterMs by position
	Forecast func(room string) estimate.Forecast
}

// Of is st's document in room.
func (ds Docs) Of(room string, st queue.Status) Doc {
	d := Doc{Status: st.State.String(), Room: room}
	switch st.State {
	case queue.Ready:
		exp := st.EntryExpires
		d.EntryToken, d.EntryExpiresAt = st.EntryToken, &exp
	case queue.Waiting:
		d.Position, d.Waiting = st.Position, st.Waiting
		d.PollAfterMs = ds.Bands.PollAfter(st.Position).Milliseconds()
		fc := ds.Forecast(room)
		secs, known := fc.ETA(st.Position)
		if known && !st.Paused {
			d.ETASeconds, d.ETAProvisional = &secs, fc.Provisional
		}
		known = known && !st.Paused
		d.ETAKnown = &known
	case queue.PreQueue:
		// Position is the arrival-order place (fifo) or absent (random:
		// decided at the opening). Polls come at the band's pace, but no
		// later than the opening.
		d.Position, d.Waiting = st.Position, st.Waiting
		band := ds.Bands.PollAfter(max(st.Position, st.Waiting))
		d.PollAfterMs = min(band, max(st.OpensIn, time.Second)).Milliseconds()
		if !st.OpensAt.IsZero() {
			at, in := st.OpensAt, st.OpensIn.Milliseconds()
			d.OpensAt, d.OpensInMs = &at, &in
		}
	case queue.Closed:
		// The place is kept (position absent when still in the pre-queue);
		// nobody is admitted until the room reopens: poll slowly.
		d.Position, d.Waiting = st.Position, st.Waiting
		d.PollAfterMs = ds.Bands.PollAfter(math.MaxInt64).Milliseconds()
	}
	if st.State != queue.Ready {
		d.Paused, d.Message = st.Paused, st.Message
	}
	return d
}
