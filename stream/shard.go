package stream

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"waitingroom/internal/loop"
	"waitingroom/queue"
)

// shard holds a share of the connections, with its own lock and worker.
// A user's subscriptions all live in one shard (it is chosen by a hash of
// the user), so the shard alone can count them.
type shard struct {
	hub   *Hub
	mu    sync.Mutex
	rooms map[string]map[*Sub]struct{}
	// users: each (room, user)'s subscriptions, oldest first.
	users map[userKey][]*Sub
	dirty map[string]bool
	wake  chan struct{}
}

type userKey struct{ room, user string }

func newShard(h *Hub) *shard {
	return &shard{hub: h, rooms: map[string]map[*Sub]struct{}{}, users: map[userKey][]*Sub{}, dirty: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// add registers s. When its user then holds more than Options.MaxPerUser
// subscriptions in the room, the oldest ones are unregistered and returned
// (in the same critical section, so two streams opened at once cannot both
// keep a slot); the caller ends them.
func (sh *shard) add(s *Sub) (evicted []*Sub) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	m := sh.rooms[s.Room]
	if m == nil {
		m = map[*Sub]struct{}{}
		sh.rooms[s.Room] = m
	}
	m[s] = struct{}{}
	k := userKey{s.Room, s.User}
	subs := append(sh.users[k], s)
	if n := sh.hub.o.MaxPerUser; n > 0 && len(subs) > n {
		evicted = subs[:len(subs)-n]
		subs = append([]*Sub(nil), subs[len(subs)-n:]...)
		for _, old := range evicted {
			delete(m, old)
		}
	}
	sh.users[k] = subs
	return evicted
}

func (sh *shard) remove(s *Sub) {
	sh.mu.Lock()
	m := sh.rooms[s.Room]
	_, had := m[s]
	delete(m, s)
	if len(m) == 0 {
		delete(sh.rooms, s.Room)
	}
	if had {
		sh.unindex(s)
	}
	sh.mu.Unlock()
	if had {
		sh.hub.conns.Add(-1)
	}
	s.end()
}

// unindex drops s from its user's list (under sh.mu).
func (sh *shard) unindex(s *Sub) {
	k := userKey{s.Room, s.User}
	subs := sh.users[k]
	if i := slices.Index(subs, s); i >= 0 {
		subs = slices.Delete(subs, i, i+1)
	}
	if len(subs) == 0 {
		delete(sh.users, k)
	} else {
		sh.users[k] = subs
	}
}

// markDirty records that room changed and wakes the worker; never blocks.
func (sh *shard) markDirty(room string) {
	sh.mu.Lock()
	sh.dirty[room] = true
	sh.mu.Unlock()
	select {
	case sh.wake <- struct{}{}:
	default:
	}
}

// run is the shard's worker: dirty rooms as they come, everything each sweep.
func (sh *shard) run(ctx context.Context) {
	loop.EveryOrWake(ctx, sh.hub.o.SweepEvery, sh.wake, sh.evaluate)
}

// evaluate looks at the connections of dirty rooms (all rooms on a sweep)
// and delivers what is due; on a sweep it also hands out chores. Redis
// reads for users who left the waiting state run in their own goroutine,
// never under the lock.
func (sh *shard) evaluate(ctx context.Context, sweep bool) {
	now := time.Now()
	var resolve map[string][]*Sub
	var stalled []*Sub
	sh.mu.Lock()
	// rooms: the rooms to look at, each with whether an event (or a
	// changed snapshot) marked it dirty since the last look.
	rooms := sh.dirty
	if sweep {
		rooms = make(map[string]bool, len(sh.rooms))
		for r := range sh.rooms {
			rooms[r] = sh.dirty[r]
		}
	}
	sh.dirty = map[string]bool{}
	for room, evented := range rooms {
		subs := sh.rooms[room]
		if len(subs) == 0 {
			continue
		}
		st := sh.hub.state(room)
		for s := range subs {
			if sweep {
				if since := s.stalledSince(); !since.IsZero() && now.Sub(since) > sh.hub.o.StallTimeout {
					stalled = append(stalled, s)
					continue
				}
				sh.chores(s, now)
			}
			if sh.evaluateSub(s, st, now, evented) {
				if resolve == nil {
					resolve = map[string][]*Sub{}
				}
				resolve[room] = append(resolve[room], s)
				s.resolving = true
			}
		}
	}
	sh.mu.Unlock()
	for _, s := range stalled {
		sh.hub.drop(s)
	}
	for room, subs := range resolve {
		sh.hub.wg.Go(func() { sh.resolve(ctx, room, subs) })
	}
}

// chores hands s the chores that are due (under sh.mu, on sweeps).
func (sh *shard) chores(s *Sub, now time.Time) {
	var c Chore
	if s.beat > 0 && !now.Before(s.nextBeat) {
		c |= Beat
		s.nextBeat = now.Add(sh.hub.beatStep(s.beat))
	}
	if s.check > 0 && !now.Before(s.nextCheck) {
		c |= Check
		s.nextCheck = now.Add(s.check)
	}
	if !s.endAt.IsZero() && !now.Before(s.endAt) {
		c |= Expire
		s.endAt = time.Time{}
	}
	if c != 0 {
		s.assign(c)
	}
}

// evaluateSub delivers s's next update if one is due under its band, and
// reports whether its status must be read from Redis instead. evented
// says whether an event has just changed the room.
//
// A band push that falls due between events waits for the next event
// while events keep coming (the room changed within SweepEvery): then it
// goes out with that event's news and its fresh publish time, instead of
// on a sweep with news up to an event interval old. When the room goes
// quiet, the next sweep sends it.
func (sh *shard) evaluateSub(s *Sub, st *roomState, now time.Time, evented bool) (needsRedis bool) {
	if s.resolving {
		return false
	}
	switch s.state {
	case queue.Ready:
		return !s.expires.IsZero() && now.After(s.expires)
	case queue.PreQueue:
		// No ticket yet: re-read at the opening or a schedule change.
		return st != nil && st.sched > s.sched
	case queue.Waiting, queue.Closed:
		if s.ticket == 0 {
			return st != nil && st.sched > s.sched // closed in the pre-queue
		}
	default:
		return false
	}
	if st == nil || s.ticket == 0 {
		return false
	}
	pos, ok := st.position(s.ticket)
	if !ok {
		return true
	}
	changed := pos != s.lastPos || st.closed != (s.state == queue.Closed)
	told := st.paused == s.lastPaused && st.message == s.lastMessage
	if !changed && told && st.waiting == s.lastWaiting {
		return false
	}
	every := sh.hub.o.Coalesce(pos)
	switch {
	case !told:
		every = 0 // the operator paused, resumed or spoke: at once, every band
	case !changed:
		// Only the total changed: tell the top band at its own pace too.
		every = max(every, time.Second)
	}
	if every > 0 {
		wait := every
		if s.spread {
			wait += time.Duration(float64(every) * s.phase)
		}
		if now.Sub(s.lastSent) < wait || !evented && now.Sub(st.seen) < sh.hub.o.SweepEvery {
			return false
		}
	}
	s.lastPos, s.lastWaiting, s.lastSent = pos, st.waiting, now
	s.lastPaused, s.lastMessage = st.paused, st.message
	s.spread = every == 0 && !told // the operator's news reached every band at once
	next := st.status(s.ticket, pos)
	s.state = next.State
	s.put(Update{Status: next, Published: st.ts, Ev: st.ev}, now)
	return false
}

// resolve reads from Redis the status of connections whose users are no
// longer waiting (admitted, left) or whose entry window ended.
func (sh *shard) resolve(ctx context.Context, room string, subs []*Sub) {
	users := make([]string, len(subs))
	for i, s := range subs {
		users[i] = s.User
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	sts, errs, err := sh.hub.o.Source.Statuses(rctx, room, users)
	cancel()
	now := time.Now()
	published, ev := time.Time{}, int64(0)
	if st := sh.hub.state(room); st != nil {
		published, ev = st.ts, st.ev
	}
	var gone []*Sub
	sh.mu.Lock()
	for i, s := range subs {
		s.resolving = false
		switch {
		case err != nil:
			// Redis unreachable: try again on a later sweep.
		case errors.Is(errs[i], queue.ErrNotInQueue):
			s.state = queue.NotInQueue
			s.put(Update{Gone: true, Idle: errors.Is(errs[i], queue.ErrIdle), Published: published, Ev: ev}, now)
			gone = append(gone, s)
		case errs[i] != nil:
		default:
			sh.setStatus(s, sts[i], now, published, ev)
		}
	}
	sh.mu.Unlock()
	for _, s := range gone {
		s.end()
	}
}

// setStatus records and delivers a status read from Redis (under sh.mu);
// published and ev are the room's state's, as Update has them.
func (sh *shard) setStatus(s *Sub, st queue.Status, now, published time.Time, ev int64) {
	s.state = st.State
	switch st.State {
	case queue.Ready:
		if s.expires.Equal(st.EntryExpires) && !s.lastSent.IsZero() {
			return // unchanged (a restored or repeated READY)
		}
		s.expires = st.EntryExpires
	case queue.Waiting, queue.Closed:
		s.lastPos, s.lastWaiting = st.Position, st.Waiting
		if st.Ticket != 0 {
			s.ticket = st.Ticket // 0 when closed in the pre-queue
		}
		s.sched = st.Sched
		s.lastPaused, s.lastMessage = st.Paused, st.Message
	case queue.PreQueue:
		s.ticket, s.sched = 0, st.Sched
		s.lastPaused, s.lastMessage = st.Paused, st.Message
	}
	s.lastSent, s.spread = now, true
	s.put(Update{Status: st, Published: published, Ev: ev}, now)
}

// all returns every subscription of the shard.
func (sh *shard) all() []*Sub {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var out []*Sub
	for _, m := range sh.rooms {
		for s := range m {
			out = append(out, s)
		}
	}
	return out
}

// roomNames adds the shard's rooms to set.
func (sh *shard) roomNames(set map[string]bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for r := range sh.rooms {
		set[r] = true
	}
}
