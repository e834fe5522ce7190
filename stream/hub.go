package stream

import (
	"context"
	"hash/maphash"
	"iter"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"waitingroom/internal/loop"
	"waitingroom/queue"
	"waitingroom/queue/estimate"
)

// Source is what the hub reads from Redis (implemented by *queue.Queue).
type Source interface {
	// SnapshotsSince reads rooms' states, one atomic read per room; a
	// room's departed tickets are left out when held[i] says the caller
	// holds exactly them (see queue.GoneHeld).
	SnapshotsSince(ctx context.Context, rooms []string, held []queue.GoneHeld) ([]queue.RoomSnapshot, error)
	// Statuses reads several users' statuses in one room.
	Statuses(ctx context.Context, room string, users []string) ([]queue.Status, []error, error)
	// EventNumbers reads rooms' event sequence numbers (see PositionNow).
	EventNumbers(ctx context.Context, rooms []string) ([]int64, error)
	// Events is the one subscription to every room's events, typed (the
	// wire format is the queue's), until ctx is done.
	Events(ctx context.Context) iter.Seq[queue.Notice]
}

// Options configure a Hub.
type Options struct {
	// Source is the queue: snapshots, statuses and the event subscription.
	Source Source
	// Shards of connections, each with its own lock and worker (default 64).
	Shards int
	// ResyncEvery: how often room states are re-read from Redis (default 1s).
	ResyncEvery time.Duration
	// SweepEvery: how often each shard looks at all its connections
	// (coalesced updates due, entry windows ended, stalls; default 250ms).
	SweepEvery time.Duration
	// StallTimeout: a connection whose update stays unwritten this long is
	// dropped (default 10s).
	StallTimeout time.Duration
	// Coalesce returns the least time between two pushes to a connection
	// at a position (default: 0 up to 100, 1s up to 1000, 5s beyond).
	Coalesce func(position int64) time.Duration
	// OnDrop is called for each connection dropped for stalling.
	OnDrop func()
	// MaxPerUser caps the subscriptions one user holds in one room on this
	// hub (0: no cap). The newest wins: a subscription past the cap ends
	// the user's oldest one with a Replaced update, so a reload or a new
	// device never locks its owner out. Each instance counts its own:
	// behind a load balancer a user may hold MaxPerUser per instance.
	MaxPerUser int
	// OnReplace is called for each subscription ended by a newer one.
	OnReplace func()
	// OnEvent is called with the room of every event the subscription
	// hears that may bring the room work (queue.Event.Wakes: all but an
	// admission run's own), whether or not this instance tracks the room,
	// and OnSubscribed at every (re)subscription (events published
	// meanwhile are lost): the admission loop's wake-ups
	// (admission.Admitter Wake and Resweep). They must not block.
	OnEvent      func(room string)
	OnSubscribed func()
	// ForgetAfter: a room with no stream here and no poll or forecast
	// asked here for this long is no longer tracked (not re-read, its
	// events ignored) until asked again (default 1 minute).
	ForgetAfter time.Duration
	Logger      *slog.Logger
}

// DefaultCoalesce is the contract's band coalescing: every change for
// positions 1–100, at most one per second up to 1000, one per 5 s beyond.
func DefaultCoalesce(position int64) time.Duration {
	switch {
	case position <= 100:
		return 0
	case position <= 1000:
		return time.Second
	}
	return 5 * time.Second
}

// Hub is one instance's push hub.
type Hub struct {
	o      Options
	shards []*shard
	seed   maphash.Seed

	mu     sync.RWMutex
	rooms  map[string]*roomEntry
	resync chan struct{} // capacity 1: "re-read now"

	est estimators // each room's wait estimate, fed by Resync

	conf *confirmer // the shared reads exact polls wait for (PositionNow)

	conns  atomic.Int64
	closed atomic.Bool
	// redisDown: the last resync could not reach Redis. Then no admission
	// can happen either, so the last state stays the best answer.
	redisDown atomic.Bool
	outMu     sync.Mutex
	outCh     chan struct{}  // closed (and replaced) when redisDown changes
	wg        sync.WaitGroup // resolve goroutines
}

// New returns a Hub; Run starts it.
func New(o Options) *Hub {
	if o.Shards <= 0 {
		o.Shards = 64
	}
	if o.ResyncEvery <= 0 {
		o.ResyncEvery = time.Second
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = 250 * time.Millisecond
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 10 * time.Second
	}
	if o.Coalesce == nil {
		o.Coalesce = DefaultCoalesce
	}
	if o.ForgetAfter <= 0 {
		o.ForgetAfter = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	h := &Hub{o: o, seed: maphash.MakeSeed(), rooms: map[string]*roomEntry{}, resync: make(chan struct{}, 1), outCh: make(chan struct{}),
		est: estimators{m: map[string]*estimate.Estimator{}}, conf: newConfirmer(o.Source.EventNumbers)}
	for range o.Shards {
		h.shards = append(h.shards, newShard(h))
	}
	return h
}

// Connections returns the number of open subscriptions.
func (h *Hub) Connections() int64 { return h.conns.Load() }

// Run subscribes, drains, re-reads and fans out until ctx is done.
func (h *Hub) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, sh := range h.shards {
		wg.Go(func() { sh.run(ctx) })
	}
	wg.Go(func() { h.resyncLoop(ctx) })
	wg.Go(func() { h.drain(ctx) })
	wg.Wait()
	h.wg.Wait()
}

// drain is the one pub/sub subscription of this instance.
func (h *Hub) drain(ctx context.Context) {
	for n := range h.o.Source.Events(ctx) {
		switch {
		case n.Subscribed:
			// (Re)subscribed: whatever was published meanwhile is lost.
			h.o.Logger.LogAttrs(ctx, slog.LevelInfo, "stream: subscribed; re-reading room states", slog.String("pattern", n.Pattern))
			h.markAllStale()
			if h.o.OnSubscribed != nil {
				h.o.OnSubscribed()
			}
		case n.Err != nil:
			h.o.Logger.Warn("stream: undecodable event", "error", n.Err)
		default:
			if h.o.OnEvent != nil && n.Event.Wakes() {
				h.o.OnEvent(n.Event.Room)
			}
			h.onEvent(n.Event)
		}
	}
}

func (h *Hub) onEvent(e queue.Event) {
	p := h.roomPtr(e.Room, false)
	if p == nil {
		return // no connection or poll cares about this room here
	}
	old := p.Load()
	if old == nil {
		h.requestResync()
		return
	}
	if e.Ev <= old.ev && !old.stale {
		// The state holds this event already: it was published before
		// a snapshot that was read (and taken) before the event got
		// here. Applying it would take it for a gap. A Redis that
		// lost its data numbers its events from 1 again; that comes
		// with a new subscription (markAllStale) or, if the data went
		// while the connection stayed, the next periodic read.
		return
	}
	n := old.apply(e)
	n.seen = time.Now()
	p.Store(n)
	if n.stale {
		h.requestResync()
	}
	h.markDirty(e.Room)
}

func (h *Hub) markDirty(room string) {
	for _, sh := range h.shards {
		sh.markDirty(room)
	}
}

func (h *Hub) markAllStale() {
	h.mu.RLock()
	for _, p := range h.rooms {
		if s := p.Load(); s != nil {
			n := *s
			n.stale = true
			p.Store(&n)
		}
	}
	h.mu.RUnlock()
	h.requestResync()
}

func (h *Hub) requestResync() {
	select {
	case h.resync <- struct{}{}:
	default:
	}
}

// resyncLoop re-reads the rooms this instance serves, every ResyncEvery
// and whenever asked.
func (h *Hub) resyncLoop(ctx context.Context) {
	loop.EveryOrWake(ctx, h.o.ResyncEvery, h.resync, func(ctx context.Context, _ bool) { h.Resync(ctx) })
}

// Resync re-reads every tracked room's state from Redis now, after
// forgetting the rooms nobody here asked about for ForgetAfter. Each read is
// told what the room's state already holds of the departed tickets (see
// roomState.goneHeld): when Redis has the same, the list is not sent again
// and the new state keeps the held one.
func (h *Hub) Resync(ctx context.Context) {
	h.forget(time.Now())
	h.mu.RLock()
	rooms := make([]string, 0, len(h.rooms))
	for r := range h.rooms {
		rooms = append(rooms, r)
	}
	h.mu.RUnlock()
	if len(rooms) == 0 {
		return
	}
	slices.Sort(rooms)
	// The states as they were when the reads were asked for: a list left
	// out is the one of that state, whatever was applied since.
	held := make([]*roomState, len(rooms))
	args := make([]queue.GoneHeld, len(rooms))
	for i, r := range rooms {
		held[i] = h.state(r)
		args[i] = held[i].goneHeld()
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	snaps, err := h.o.Source.SnapshotsSince(rctx, rooms, args)
	cancel()
	if err != nil && ctx.Err() != nil {
		return // shutting down: the read was cut, Redis is not down
	}
	if err != nil {
		h.setRedisDown(true)
		return // streams keep their last status; polls answer from it (see Position)
	}
	h.setRedisDown(false)
	now := time.Now()
	for i, sn := range snaps {
		h.take(sn, held[i], h.est.observe(sn, now), now)
	}
}

// take replaces a room's state with snapshot sn, read given
// held.goneHeld(), unless the state has meanwhile applied events newer
// than sn (newer by the numbers of a Redis that kept its data).
func (h *Hub) take(sn queue.RoomSnapshot, held *roomState, fc estimate.Forecast, now time.Time) {
	p := h.roomPtr(sn.Room, true)
	old := p.Load()
	// A room's ev below one this instance saw before the read means Redis
	// lost its data (a restart without persistence, a failover to a
	// replica behind): its numbers start over, so the newer-event test
	// below would keep the old state until the new ev passed it. The
	// snapshot is the truth now; what was applied meanwhile is read again.
	regressed := held != nil && held.ev > sn.Ev
	if regressed {
		h.o.Logger.Warn("stream: a room's event number went back (Redis lost data); its state is read anew",
			"room", sn.Room, "seen", held.ev, "now", sn.Ev)
		h.requestResync()
	}
	if old != nil && old.ev > sn.Ev && !regressed {
		// Events newer than the snapshot arrived while it was read:
		// keep them (with the new forecast, unless yet another event
		// came in meanwhile: the next read brings it), and read again
		// if something may still be missing.
		n := *old
		n.fc = fc
		p.CompareAndSwap(old, &n)
		if old.stale {
			h.requestResync()
		}
		return
	}
	n, ok := fromSnapshot(sn, held, fc, now)
	if !ok {
		h.requestResync() // cannot happen: the read was given held's numbers
		return
	}
	if old != nil {
		n.seen = old.seen
	}
	if !p.CompareAndSwap(old, n) {
		// An event was applied while the snapshot was read or
		// compared: it may be newer than the snapshot, so the
		// snapshot must not replace it; read again.
		h.requestResync()
		return
	}
	if old == nil || old.ev != sn.Ev || old.serving != sn.Serving || old.waiting != sn.Waiting ||
		old.paused != sn.Paused || old.message != sn.Message {
		h.markDirty(sn.Room)
	}
}

// setRedisDown records whether Redis answered the last resync and, on a
// change, wakes every stream (see Outage).
func (h *Hub) setRedisDown(down bool) {
	if h.redisDown.Swap(down) == down {
		return
	}
	h.outMu.Lock()
	close(h.outCh)
	h.outCh = make(chan struct{})
	h.outMu.Unlock()
	if down {
		h.o.Logger.Warn("stream: Redis unreachable; streams keep their last status and are told to retry slowly if cut")
	} else {
		h.o.Logger.Info("stream: Redis reachable again; streams resume")
	}
}

// Outage reports whether Redis is unreachable from this instance (the last
// resync failed), and a channel closed at the next change. Streams tell
// their clients: nothing moves meanwhile (no admission runs), places are
// kept, and a client cut off should come back slowly.
func (h *Hub) Outage() (down bool, changed <-chan struct{}) {
	h.outMu.Lock()
	defer h.outMu.Unlock()
	return h.redisDown.Load(), h.outCh
}

// roomEntry is a tracked room: its state, and when it was last asked for
// here (a poll, a stream, a forecast).
type roomEntry struct {
	atomic.Pointer[roomState]
	used atomic.Int64 // Unix ns
}

// roomPtr returns room's state holder, creating it when create.
func (h *Hub) roomPtr(room string, create bool) *roomEntry {
	h.mu.RLock()
	p := h.rooms[room]
	h.mu.RUnlock()
	if p != nil || !create {
		return p
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if p = h.rooms[room]; p == nil {
		p = &roomEntry{}
		p.used.Store(time.Now().UnixNano())
		h.rooms[room] = p
	}
	return p
}

// use returns room's state holder, tracking the room from now on if it
// was not, and records that it was asked for now.
func (h *Hub) use(room string) *roomEntry {
	p := h.roomPtr(room, true)
	if now := time.Now().UnixNano(); p.used.Load() < now-int64(time.Second) {
		p.used.Store(now) // to the second: one store a second, not one per poll
	}
	return p
}

// forget stops tracking the rooms with no stream here that nobody asked
// about for ForgetAfter: their events are ignored and they are not re-read,
// so a room costs this instance nothing once its users are elsewhere.
func (h *Hub) forget(now time.Time) {
	cutoff := now.Add(-h.o.ForgetAfter).UnixNano()
	var old []string
	h.mu.RLock()
	for r, p := range h.rooms {
		if p.used.Load() < cutoff {
			old = append(old, r)
		}
	}
	h.mu.RUnlock()
	if len(old) == 0 {
		return
	}
	streamed := map[string]bool{}
	for _, sh := range h.shards {
		sh.roomNames(streamed)
	}
	h.mu.Lock()
	for _, r := range old {
		if p := h.rooms[r]; p != nil && !streamed[r] && p.used.Load() < cutoff {
			delete(h.rooms, r)
			h.est.forget(r)
		}
	}
	h.mu.Unlock()
}

func (h *Hub) state(room string) *roomState {
	if p := h.roomPtr(room, false); p != nil {
		return p.Load()
	}
	return nil
}

// Position answers a poll from memory: the waiting status of ticket in
// room, when the room's state is fresh and the ticket is still waiting.
// While Redis is unreachable the last state counts as fresh (nothing can be
// admitted meanwhile), so waiting users keep seeing their place.
// ok is false otherwise; the caller then asks Redis. A room polled here for
// the first time is tracked from now on. The answer may trail Redis by one
// pub/sub hop; PositionNow does not.
func (h *Hub) Position(room string, ticket int64) (queue.Status, bool) {
	p := h.use(room)
	st := p.Load()
	if st == nil {
		h.requestResync()
		return queue.Status{}, false
	}
	if !h.fresh(st) || ticket <= 0 {
		return queue.Status{}, false
	}
	pos, ok := st.position(ticket)
	if !ok {
		return queue.Status{}, false
	}
	return st.status(ticket, pos), true
}

// fresh reports whether st may answer polls: no event is known to be
// missing, and a snapshot confirmed it within 3 × ResyncEvery (or Redis is
// unreachable).
func (h *Hub) fresh(st *roomState) bool {
	aged := time.Since(st.snapshotAt) > 3*h.o.ResyncEvery && !h.redisDown.Load()
	return !st.stale && !aged
}

// PositionNow is Position made exact at the moment of the call, for the
// front of the queue where a poll must see READY as soon as admission
// happened: it waits for one read of the room's event number that starts
// after the call — shared by every call on this hub meanwhile, all rooms
// in one pipeline — and answers from memory only if the state has applied
// every event up to that number. So the answer reflects every admission,
// departure and pause completed before the call, on any instance. ok is
// false when the state cannot say (not tracked yet, a missing or
// in-flight event, Redis unreachable, the ticket admitted or gone): the
// caller then asks Redis, which stays the judge.
func (h *Hub) PositionNow(ctx context.Context, room string, ticket int64) (queue.Status, bool) {
	if ticket <= 0 || h.redisDown.Load() {
		return queue.Status{}, false
	}
	p := h.use(room)
	st := p.Load()
	if st == nil {
		h.requestResync()
		return queue.Status{}, false
	}
	if _, ok := st.position(ticket); !ok || !h.fresh(st) {
		return queue.Status{}, false // Redis must be read anyway
	}
	ev, err := h.conf.wait(ctx, room)
	if err != nil {
		return queue.Status{}, false
	}
	if st = p.Load(); st.ev < ev || !h.fresh(st) {
		return queue.Status{}, false
	}
	pos, ok := st.position(ticket)
	if !ok {
		return queue.Status{}, false
	}
	return st.status(ticket, pos), true
}

// Subscribe registers a stream of user in room whose current status is
// initial (read by the caller); initial is delivered at once.
func (h *Hub) Subscribe(room, user string, initial queue.Status) *Sub {
	s := &Sub{Room: room, User: user, hub: h, notify: make(chan struct{}, 1), done: make(chan struct{}), phase: rand.Float64()}
	s.shard = h.shards[maphash.String(h.seed, user)%uint64(len(h.shards))]
	var ev int64
	if st := h.use(room).Load(); st == nil {
		h.requestResync()
	} else {
		ev = st.ev
	}
	now := time.Now()
	s.shard.mu.Lock()
	s.shard.setStatus(s, initial, now, time.Time{}, ev)
	s.shard.mu.Unlock()
	if h.closed.Load() {
		s.finish(Update{Reconnect: true}, now)
		return s
	}
	h.conns.Add(1)
	for _, old := range s.shard.add(s) {
		// Unregistered by add: no worker writes to it any more.
		h.conns.Add(-1)
		old.finish(Update{Replaced: true}, now)
		if h.o.OnReplace != nil {
			h.o.OnReplace()
		}
	}
	return s
}

// beatStep is the time from one Beat to the next, for a stream that must
// have one at least every beat: one sweep less, as they are handed out on
// sweeps.
func (h *Hub) beatStep(beat time.Duration) time.Duration {
	if step := beat - h.o.SweepEvery; step > 0 {
		return step
	}
	return beat
}

// drop ends a stalled subscription and counts it.
func (h *Hub) drop(s *Sub) {
	h.o.Logger.Debug("stream: dropping a stalled connection", "room", s.Room)
	// Counted before the stream ends, so whoever sees it end sees it counted.
	if h.o.OnDrop != nil {
		h.o.OnDrop()
	}
	s.shard.remove(s)
}

// Close tells every connection to reconnect elsewhere and ends them; new
// subscriptions are refused the same way. Run must be stopped separately.
func (h *Hub) Close() {
	h.closed.Store(true)
	now := time.Now()
	for _, sh := range h.shards {
		for _, s := range sh.all() {
			s.finish(Update{Reconnect: true}, now)
			sh.remove(s)
		}
	}
}

// Rooms returns the rooms with open subscriptions on this instance.
func (h *Hub) Rooms() []string {
	set := map[string]bool{}
	for _, sh := range h.shards {
		sh.roomNames(set)
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	return out
}

// Users returns the users of room holding a stream here while waiting:
// they count as present.
func (h *Hub) Users(room string) []string {
	var out []string
	for _, sh := range h.shards {
		sh.mu.Lock()
		for s := range sh.rooms[room] {
			if s.state == queue.Waiting || s.state == queue.Closed {
				out = append(out, s.User)
			}
		}
		sh.mu.Unlock()
	}
	return out
}
