package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The event contract. The admit, leave, open, schedule and delete scripts
// publish one event per change of a room, and the enter script one for a
// room's first arrival (its queue or pre-queue was empty: it wakes the
// room's admission), on the room's channel
// (EventChannel, "<prefix>{room}:events" on database 0; EventPattern
// matches every room's), so that
// every instance can keep its rooms' state without a Redis read per
// connection (package stream). This file is the one place that knows the
// wire format; subscribers get typed Events from Events.
//
// Wire format: a JSON object written by the scripts with cjson:
//
//	room      string    the room
//	ev        integer   the room's event sequence number (one more per event)
//	ts        integer   Unix ms, Redis clock
//	kind      string    absent (admission or departure), "open" or "config"
//	serving   integer   every ticket at or below it no longer waits: the
//	                    last admitted ticket, or one below a waiting user
//	                    the admission passed over as absent
//	waiting   integer   queue length after the change
//	admitted  [string]  users admitted (admit; absent when none)
//	left      [integer] tickets above serving that stopped waiting (admit:
//	                    dropped as idle, or admitted past a passed-over
//	                    user; leave: the one who left; absent when none)
//	rate      string    measured admissions per second (admit only)
//	active    integer   active count (admit only; not read)
//	pruned    integer   expired admissions removed (admit only; not read)
//	opened    integer   users moved out of the pre-queue (open only; not read)
//	sched     integer   the room's schedule number (open, config)
//	closed    boolean   the method is reject (config only)
//	paused    boolean   the room is paused (config only; absent from an
//	                    older publisher)
//	message   string    the operator's message to waiting users, "" for
//	                    none (config only; absent from an older publisher)
//
// Instances of the old and the new version publish to and read from the
// same channels during a rolling deploy, so the channel names stay and the
// format only grows: a field is never renamed, removed or given a new
// meaning, and a new field must be optional (readers ignore fields they do
// not know, and must do without one an older publisher leaves out).

// EventKind says which script published an event.
type EventKind string

// Kinds of events.
const (
	// EventQueue: the queue moved — users admitted, admissions pruned,
	// idle users dropped or the waiting total changed (admit), a waiting
	// user left (leave), a first arrival (enter) or the room was deleted
	// (delete). On the wire it has no kind.
	EventQueue EventKind = ""
	// EventOpen: the pre-queue became the queue at a scheduled opening,
	// with fresh tickets above every earlier one (open).
	EventOpen EventKind = "open"
	// EventConfig: the method, the opening time, the pause or the
	// operator's message changed (schedule).
	EventConfig EventKind = "config"
)

// Event is one change of a room, as published by the queue's scripts and
// read back by Events. On the wire it is the JSON object described above;
// that format is shared by instances of the old and the new version during
// a rolling deploy, so it stays readable both ways: fields are only added,
// never renamed or given a new meaning.
type Event struct {
	Kind EventKind
	Room string
	// Ev numbers the room's events: one more per event, so a subscriber
	// that sees a gap knows it missed one.
	Ev int64
	// At is when the event was published (Redis clock, ms).
	At       time.Time
	Serving  int64    // every ticket at or below it no longer waits
	Waiting  int64    // queue length after the change
	Admitted []string // users admitted (EventQueue)
	Left     []int64  // tickets above Serving that stopped waiting (left, dropped, admitted past an absent user)
	// Rate is the measured admission rate in users per second, set by
	// admission runs only (nil otherwise).
	Rate *float64
	// Sched is the room's schedule number (EventOpen, EventConfig; 0
	// otherwise): it grows at each opening and method or time change.
	Sched int64
	// Closed is whether the method is now reject (EventConfig only).
	Closed *bool
	// Paused is whether the room is now paused, and Message the
	// operator's message to waiting users ("": none) (EventConfig only;
	// nil from a publisher of an older version, which leaves them as
	// they were).
	Paused  *bool
	Message *string
}

// Wakes reports whether e may bring its room work that the instance
// running the room does not know of, so that the room's admission must be
// woken (admission.Admitter.Wake): every event but an admission run's
// own, the only ones that carry the measured rate. That run's instance
// schedules the room from its result; waking it for its own event would
// run it once more for nothing.
func (e Event) Wakes() bool { return e.Rate == nil }

// wireEvent is an Event as the scripts encode it.
type wireEvent struct {
	Kind     string   `json:"kind"`
	Room     string   `json:"room"`
	Ev       int64    `json:"ev"`
	TS       int64    `json:"ts"`
	Serving  int64    `json:"serving"`
	Waiting  int64    `json:"waiting"`
	Admitted []string `json:"admitted"`
	Left     []int64  `json:"left"`
	Rate     string   `json:"rate"`
	Sched    int64    `json:"sched"`
	Closed   *bool    `json:"closed"`
	Paused   *bool    `json:"paused"`
	Message  *string  `json:"message"`
}

// parseEvent reads one event as published on a room's channel. An event
// that is not JSON of the contract's shape, names no room or carries a
// rate that is not a number is an error.
func parseEvent(payload string) (Event, error) {
	var w wireEvent
	if err := json.Unmarshal([]byte(payload), &w); err != nil {
		return Event{}, fmt.Errorf("queue: event: %w", err)
	}
	if w.Room == "" {
		return Event{}, errors.New("queue: event: no room")
	}
	e := Event{
		Kind: EventKind(w.Kind), Room: w.Room, Ev: w.Ev, At: time.UnixMilli(w.TS),
		Serving: w.Serving, Waiting: w.Waiting, Admitted: w.Admitted, Left: w.Left,
		Sched: w.Sched, Closed: w.Closed, Paused: w.Paused, Message: w.Message,
	}
	if w.Rate != "" {
		r, err := strconv.ParseFloat(w.Rate, 64)
		if err != nil {
			return Event{}, fmt.Errorf("queue: event: rate %q: %w", w.Rate, err)
		}
		e.Rate = &r
	}
	return e, nil
}

// Notice is one item of an event subscription (Events): a room's event,
// the news that the subscription was (re)established, or a message that
// is not an event.
type Notice struct {
	// Event is the room's event (when neither Subscribed nor Err).
	Event Event
	// Subscribed: the subscription was established, or re-established
	// after a reconnect, on Pattern. Pub/sub is at most once: events
	// published while it was down are lost, so what a subscriber holds
	// must be re-read from Redis.
	Subscribed bool
	Pattern    string
	// Err: a message on a room's channel that parseEvent refused.
	Err error
}

// Events subscribes to every room's events with one pattern subscription
// (EventPattern) and yields them, in the order published per room, until
// ctx is done or the caller stops ranging; the subscription ends with the
// loop. It runs on the caller's goroutine: a slow caller delays the next
// notice (up to 4096 are buffered by the client), never Redis.
func (q *Queue) Events(ctx context.Context) iter.Seq[Notice] {
	return func(yield func(Notice) bool) {
		ps := q.rdb.PSubscribe(ctx, q.EventPattern())
		defer ps.Close()
		ch := ps.ChannelWithSubscriptions(redis.WithChannelSize(4096))
		for {
			var n Notice
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				switch m := m.(type) {
				case *redis.Subscription:
					n = Notice{Subscribed: true, Pattern: m.Channel}
				case *redis.Message:
					n.Event, n.Err = parseEvent(m.Payload)
				default:
					continue
				}
			}
			if !yield(n) {
				return
			}
		}
	}
}
