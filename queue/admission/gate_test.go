package admission_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/admission"
	"waitingroom/queue/queuetest"
)

// tickGate is a admission.Gate that allows per admissions a tick and records
// what the runs asked, were allowed and used.
type tickGate struct {
	mu                   sync.Mutex
	per, budget, refills int
	asked, allowed, used int
}

func (g *tickGate) Refill(time.Time) {
	g.mu.Lock()
	g.budget, g.refills = g.per, g.refills+1
	g.mu.Unlock()
}

func (g *tickGate) Take(n int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := min(n, g.budget)
	g.budget -= m
	return m
}

func (g *tickGate) Done(n, allowed, used int) {
	g.mu.Lock()
	g.budget += allowed - used
	g.asked, g.allowed, g.used = g.asked+n, g.allowed+allowed, g.used+used
	g.mu.Unlock()
}

func (g *tickGate) balance() (budget, allowed, used int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.budget, g.allowed, g.used
}

// TestAdmitterGatesAdaptiveRooms: with a Gate of 4 admissions a tick, an
// adaptive room with 40 free slots and 30 waiting admits at most 4 a tick
// (the gate, not the limit, binds) in ticket order; a fixed room beside it
// is admitted whole in its first tick (its first run passes the gate, as
// a room not run yet does, and its runs after it do not); what the runs do
// not use goes back to the tick's budget.
func TestAdmitterGatesAdaptiveRooms(t *testing.T) {
	q, _ := queuetest.Queue(t, 0, time.Minute)
	ctx := context.Background()
	for room, mode := range map[string]queue.Mode{"ad": queue.ModeAdaptive, "fx": queue.ModeFixed} {
		if err := q.EnsureRoom(ctx, room, queue.RoomConfig{Target: 40, EntryTTL: time.Minute, Mode: mode}); err != nil {
			t.Fatal(err)
		}
		for i := range 30 {
			if _, err := q.Enter(ctx, room, fmt.Sprintf("%s-%02d", room, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	gate := &tickGate{per: 4}
	a := admission.New(q, admission.Options{Gate: gate})
	active := func(room string) int64 {
		t.Helper()
		info, err := q.Room(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		return info.Active
	}
	mustTick(t, a)
	if n := active("fx"); n != 30 {
		t.Fatalf("fixed room after one tick: %d active, want all 30 (the gate is for adaptive rooms)", n)
	}
	prev := active("ad")
	if prev > 4 {
		t.Fatalf("adaptive room after one tick: %d active, want at most the gate's 4", prev)
	}
	for tick := 2; tick <= 6; tick++ {
		mustTick(t, a)
		n := active("ad")
		if n-prev != 4 {
			t.Fatalf("tick %d: %d admitted, want the gate's 4 (40 slots free, %d waiting)", tick, n-prev, 30-prev)
		}
		prev = n
	}
	// Ticket order holds under the gate: the first `prev` users are in.
	for i := range 30 {
		want := queue.Waiting
		if int64(i) < prev {
			want = queue.Ready
		}
		if s := stateOf(t, q, "ad", fmt.Sprintf("ad-%02d", i)); s != want {
			t.Fatalf("ad-%02d: %v, want %v (%d admitted in ticket order)", i, s, want, prev)
		}
	}
	budget, allowed, used := gate.balance()
	if used > allowed || budget < 0 || budget > gate.per {
		t.Fatalf("gate: budget %d, allowed %d, used %d: the runs must give back what they did not use", budget, allowed, used)
	}
	if gate.refills < 6 {
		t.Fatalf("gate refilled %d times over 6 ticks, want once a tick", gate.refills)
	}
}
