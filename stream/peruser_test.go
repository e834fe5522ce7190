package stream_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"waitingroom/queue"
	"waitingroom/stream"
)

// TestNewestStreamWins: a user's fourth subscription in a room (cap 3) ends
// the oldest with a Replaced update, and only that one; the others, and
// another user's, keep receiving.
func TestNewestStreamWins(t *testing.T) {
	var replaced atomic.Int64
	f := newFixture(t, stream.Options{Coalesce: everyChange, MaxPerUser: 3, OnReplace: func() { replaced.Add(1) }})
	other := f.subscribe("u0")
	var mine []*reader
	for range 4 {
		mine = append(mine, f.subscribe("u1")) // Enter is idempotent: the same place
	}
	select {
	case <-mine[0].sub.Done():
	default:
		t.Fatal("the oldest subscription is still open after the fourth")
	}
	waitFor(t, "the oldest to hold the replaced update", func() bool {
		l := mine[0].latest.Load()
		return l != nil && l.Replaced
	})
	for i, r := range mine[1:] {
		select {
		case <-r.sub.Done():
			t.Fatalf("subscription %d ended; only the oldest should", i+2)
		default:
		}
	}
	if got := replaced.Load(); got != 1 {
		t.Fatalf("OnReplace called %d times, want 1", got)
	}
	if got := f.hub.Connections(); got != 4 {
		t.Fatalf("hub connections = %d, want 4 (3 of u1, 1 of u0)", got)
	}
	// The survivors still follow the queue: u0 is admitted and hears READY,
	// u1's three streams hear position 1.
	f.setTarget(1)
	f.admit()
	waitFor(t, "READY for u0 and position 1 on each of u1's streams", func() bool {
		if l := other.latest.Load(); l == nil || l.Status.State != queue.Ready {
			return false
		}
		for _, r := range mine[1:] {
			if l := r.latest.Load(); l == nil || l.Status.Position != 1 {
				return false
			}
		}
		return true
	})
	if l := mine[0].latest.Load(); !l.Replaced {
		t.Fatalf("the replaced subscription got another update after its end: %+v", l)
	}
}

// TestConcurrentSubscribesKeepTheCap: many subscriptions of one user opened
// at once leave exactly MaxPerUser open, and every other one is told.
func TestConcurrentSubscribesKeepTheCap(t *testing.T) {
	var replaced atomic.Int64
	f := newFixture(t, stream.Options{MaxPerUser: 2, OnReplace: func() { replaced.Add(1) }})
	const n = 40
	subs := make([]*stream.Sub, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			subs[i] = f.hub.Subscribe("r1", "u1", queue.Status{State: queue.Waiting, Ticket: 1, Position: 1, Waiting: 1})
		})
	}
	wg.Wait()
	open := 0
	for i, s := range subs {
		select {
		case <-s.Done():
			if u, ok := s.Take(); !ok || !u.Replaced {
				t.Fatalf("subscription %d ended without a Replaced update: %+v %v", i, u, ok)
			}
		default:
			open++
			t.Cleanup(s.Close)
		}
	}
	if open != 2 || replaced.Load() != n-2 || f.hub.Connections() != 2 {
		t.Fatalf("open %d, replaced %d, hub connections %d: want 2, %d, 2", open, replaced.Load(), f.hub.Connections(), n-2)
	}
	// Other users are not counted with u1.
	for i := range 3 {
		s := f.hub.Subscribe("r1", "u"+strconv.Itoa(i+2), queue.Status{State: queue.Waiting, Ticket: 1, Position: 1, Waiting: 1})
		t.Cleanup(s.Close)
	}
	if got := replaced.Load(); got != n-2 {
		t.Fatalf("other users' subscriptions replaced something: %d", got)
	}
}
