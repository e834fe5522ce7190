package stream

import (
	"sync"
	"time"

	"waitingroom/queue"
)

// Update is one message for a connection.
type Update struct {
	// Status is the connection's status when neither Gone nor Reconnect.
	Status queue.Status
	// Gone: the user is no longer in the queue (left, window ended, or
	// ordered); the stream ends with a "gone" event.
	Gone bool
	// Idle (with Gone): the admission run dropped the user as idle
	// (queue.ErrIdle).
	Idle bool
	// Reconnect: this instance is shutting down; the stream ends with a
	// retry hint so the client reconnects elsewhere.
	Reconnect bool
	// Replaced: the same user opened a newer stream in this room beyond
	// Options.MaxPerUser; this, the oldest, ends. The client must not
	// reconnect (it would take the slot back from the newer one, and the
	// two would take turns): it keeps its place and may poll.
	Replaced bool
	// Published is when the change was published (Redis clock), for the
	// fan-out lag; zero for updates not caused by an event.
	Published time.Time
	// Ev is the room's event number as the hub knew it when it made the
	// update (0: no state yet): it only grows, unless Redis lost its data
	// (see the package doc). SSE gives it as the event's id.
	Ev int64
}

// Sub is one stream connection's subscription. Its writer waits on
// Notify, then writes what Take returns and does what Chores returns.
type Sub struct {
	Room, User string

	hub    *Hub
	shard  *shard
	notify chan struct{}
	done   chan struct{}

	mu       sync.Mutex // guards slot, filledAt, chores, closed
	slot     *Update
	filledAt time.Time
	chores   Chore
	closed   bool

	// Owned by the shard (under shard.mu).
	ticket      int64
	state       queue.State
	lastPos     int64
	lastWaiting int64
	// lastPaused and lastMessage are the pause and message last delivered
	// (waiting states): a change is pushed at once, whatever the band.
	lastPaused  bool
	lastMessage string
	lastSent    time.Time
	expires     time.Time // READY: end of the entry window
	sched       int64     // the room's schedule number when last read (pre-queue)
	resolving   bool
	// spread: the last push was not a band push (the initial status, a
	// status read, the operator's news), which many connections may have
	// had at once; the next band push then waits phase × the band's
	// interval longer, so those pushes spread over the interval.
	spread bool
	phase  float64 // in [0, 1), fixed per subscription
	// The chores asked for by Schedule, and when each is next due.
	beat, check         time.Duration
	nextBeat, nextCheck time.Time
	endAt               time.Time
}

// Chore is work the hub hands a stream's writer on its sweeps, so that a
// stream needs no timer of its own: one sweep per shard does for all of
// its connections what a ticker per connection would.
type Chore uint8

const (
	// Beat: write a keep-alive (an SSE comment, a WebSocket ping).
	Beat Chore = 1 << iota
	// Check: see whether the client is still there.
	Check
	// Expire: the stream's credential has expired; end it.
	Expire
)

// Schedule asks the hub for chores: Beat at least every beat (handed out
// up to one SweepEvery early, so that the gap between two is never longer
// than beat), Check about every check, and Expire once, at the first sweep
// at or after end. A zero value asks for none of that kind. The writer
// collects them with Chores when Notify is signalled.
func (s *Sub) Schedule(beat, check time.Duration, end time.Time) {
	now := time.Now()
	s.shard.mu.Lock()
	s.beat, s.check, s.endAt = beat, check, end
	s.nextBeat, s.nextCheck = now.Add(s.shard.hub.beatStep(beat)), now.Add(check)
	s.shard.mu.Unlock()
}

// Chores returns the chores handed out since the last call, and clears them.
func (s *Sub) Chores() Chore {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chores
	s.chores = 0
	return c
}

// assign adds chores c and signals the writer (not an update: it does not
// count as unwritten for StallTimeout).
func (s *Sub) assign(c Chore) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.chores |= c
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Notify is signalled (capacity 1, never blocks the hub) when an update is
// waiting in the slot or a chore was handed out.
func (s *Sub) Notify() <-chan struct{} { return s.notify }

// Done is closed when the subscription ends: Close, a drop for stalling,
// the hub's shutdown (which first leaves a Reconnect update) or a newer
// stream of the same user (which first leaves a Replaced update).
func (s *Sub) Done() <-chan struct{} { return s.done }

// Take returns the latest update and empties the slot.
func (s *Sub) Take() (Update, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.slot == nil {
		return Update{}, false
	}
	u := *s.slot
	s.slot = nil
	s.filledAt = time.Time{}
	return u, true
}

// Close ends the subscription (the connection went away).
func (s *Sub) Close() { s.shard.remove(s) }

// put overwrites the slot with u and signals the writer.
func (s *Sub) put(u Update, now time.Time) { s.fill(u, now, false) }

// stalledSince returns when the unwritten update was first put, or zero.
func (s *Sub) stalledSince() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.filledAt
}

// finish leaves u as the subscription's last update and ends it, in one
// step: no later put (a status read racing with the end) can overwrite it.
func (s *Sub) finish(u Update, now time.Time) { s.fill(u, now, true) }

// fill overwrites the slot with u unless the subscription has ended, ends
// it when last is set, and signals the writer.
func (s *Sub) fill(u Update, now time.Time, last bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.slot = &u
	if s.filledAt.IsZero() {
		s.filledAt = now
	}
	if last {
		s.closed = true
		close(s.done)
	}
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// end closes done once.
func (s *Sub) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
}

// Outage is the hub's Outage: whether Redis is unreachable, and a channel
// closed when that changes.
func (s *Sub) Outage() (down bool, changed <-chan struct{}) { return s.hub.Outage() }
