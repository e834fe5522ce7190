package admission_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/admission"
	"waitingroom/queue/members"
	"waitingroom/queue/queuetest"
)

// never is an interval no test outlives: an admitter that ticks or sweeps
// this seldom runs a room only for a wake-up.
const never = time.Hour

// runCounts counts each room's admission runs (OnAdmit).
type runCounts struct{ m sync.Map } // room → *atomic.Int64

func (c *runCounts) onAdmit(r queue.AdmitResult) {
	n, _ := c.m.LoadOrStore(r.Room, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

func (c *runCounts) of(room string) int64 {
	if n, ok := c.m.Load(room); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

func (c *runCounts) total() (n int64) {
	c.m.Range(func(_, v any) bool { n += v.(*atomic.Int64).Load(); return true })
	return n
}

// running starts a's Run after its first tick (the rooms' first sweep:
// from then on a wake-up runs a room at once) and stops it at the test's
// end.
func running(t *testing.T, a *admission.Admitter) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a.Prepare(ctx) // Run's own, done here: Run does not sweep as it starts
	mustTick(t, a)
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// enter makes user enter room, failing the test on an error.
func enter(t *testing.T, q *queue.Queue, room, user string) {
	t.Helper()
	if _, err := q.Enter(context.Background(), room, user); err != nil {
		t.Fatalf("%s enters %s: %v", user, room, err)
	}
}

// waitReady waits until user is READY in room (a background run).
func waitReady(t *testing.T, q *queue.Queue, room, user string) {
	t.Helper()
	queuetest.WaitFor(t, user+" READY in "+room, func() bool { return stateOf(t, q, room, user) == queue.Ready })
}

// TestAdmitterRunsWokenRoomAtOnce: among 300 idle rooms, a room woken by
// its first arrival is run at once, not at the next tick (the interval is
// an hour), and no other room is run; a burst of a thousand wake-ups runs
// it once, and a wake-up within the gap after its run (an hour here)
// waits for the gap.
func TestAdmitterRunsWokenRoomAtOnce(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	manyRooms(t, q, 300, 10, time.Hour)
	var runs runCounts
	a := admission.New(q, admission.Options{Woken: true, Interval: never, SweepEvery: never, WakeGap: never,
		OnAdmit: runs.onAdmit, Logger: testLogger(t)})
	running(t, a)

	// alice's enter publishes the first arrival's event; the hub hands
	// it to Wake, here a thousand times over, from several goroutines.
	enter(t, q, "r17", "alice")
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for range 100 {
				a.Wake("r17")
			}
		})
	}
	wg.Wait()
	waitReady(t, q, "r17", "alice")
	// bob's first arrival comes within the gap after alice's run: r17
	// holds her admission, its next run due at her deadline or the gap's
	// end, both an hour away.
	enter(t, q, "r17", "bob")
	a.Wake("r17")
	// A room woken last is run once every wake-up before its own has been
	// handled: r17's count below is final.
	enter(t, q, "r250", "carol")
	a.Wake("r250")
	waitReady(t, q, "r250", "carol")
	if n := runs.of("r17"); n != 1 {
		t.Fatalf("r17 ran %d times for 1,001 wake-ups, want once", n)
	}
	if s := stateOf(t, q, "r17", "bob"); s != queue.Waiting {
		t.Fatalf("bob: %v, want WAITING until the gap has passed", s)
	}
	if n := runs.total(); n != 2 {
		t.Fatalf("%d runs in all, want r17's and r250's: no idle room is run", n)
	}
}

// TestAdmitterRunsRoomWokenAgainAfterTheGap: a room holding admissions
// only, woken by a later first arrival, runs for it once the gap since its
// last run has passed, still without a tick.
func TestAdmitterRunsRoomWokenAgainAfterTheGap(t *testing.T) {
	q, _ := queuetest.Queue(t, 10, time.Hour)
	var runs runCounts
	a := admission.New(q, admission.Options{Woken: true, Interval: never, SweepEvery: never, WakeGap: 20 * time.Millisecond,
		OnAdmit: runs.onAdmit, Logger: testLogger(t)})
	running(t, a)
	for _, user := range []string{"alice", "bob", "carol"} {
		enter(t, q, "r1", user)
		a.Wake("r1")
		waitReady(t, q, "r1", user)
	}
	if n := runs.of("r1"); n != 3 {
		t.Fatalf("r1 ran %d times for three arrivals one after another, want 3", n)
	}
}

// TestAdmitterLeavesBusyRoomToTheTick: a room the next tick runs anyway
// (someone waits) is not run again between ticks for its events, however
// many (its own runs publish one each, departures too).
func TestAdmitterLeavesBusyRoomToTheTick(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	manyRooms(t, q, 3, 1, time.Hour) // target 1
	var runs runCounts
	a := admission.New(q, admission.Options{Woken: true, Interval: never, SweepEvery: never, WakeGap: time.Millisecond,
		OnAdmit: runs.onAdmit, Logger: testLogger(t)})
	running(t, a)
	enter(t, q, "r0", "alice")
	a.Wake("r0")
	waitReady(t, q, "r0", "alice") // r0 is full now, for an hour
	// bob is the first in the empty queue: his wake-up runs r0, which
	// cannot admit him, so r0 is due at every tick from now on.
	enter(t, q, "r0", "bob")
	a.Wake("r0")
	queuetest.WaitFor(t, "r0's run for bob", func() bool { return runs.of("r0") == 2 })
	// Once a room woken later is run, r0's run for bob is over and
	// scheduled.
	enter(t, q, "r1", "carol")
	a.Wake("r1")
	waitReady(t, q, "r1", "carol")
	for range 100 {
		a.Wake("r0")
	}
	enter(t, q, "r2", "dave")
	a.Wake("r2")
	waitReady(t, q, "r2", "dave")
	if n := runs.of("r0"); n != 2 {
		t.Fatalf("r0 ran %d times, want 2: a room due at the next tick is left to it", n)
	}
	if s := stateOf(t, q, "r0", "bob"); s != queue.Waiting {
		t.Fatalf("bob: %v, want WAITING (r0 is full)", s)
	}
}

// TestAdmittersRunWokenRoomOnItsOwnerOnly: two instances share 40 rooms
// and both hear every event (each hub hands it to its Wake); a woken room
// is run once, at once, by the instance that owns it alone.
func TestAdmittersRunWokenRoomOnItsOwnerOnly(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	rooms := manyRooms(t, q, 40, 10, time.Hour)
	key := prefix + "instances"
	var runs [2]runCounts
	var as [2]*admission.Admitter
	var ms [2]*members.Members
	for i := range as {
		ms[i] = members.New(rdb, members.Options{Key: key, ID: fmt.Sprint("i", i), Expiry: never})
		as[i] = admission.New(q, admission.Options{Woken: true, Members: ms[i], Interval: never, SweepEvery: never,
			OnAdmit: runs[i].onAdmit, Logger: testLogger(t)})
	}
	// Each beats before the other starts, and again after: both views
	// hold both instances before either runs.
	for _, m := range append(ms[:], ms[0]) {
		if _, err := m.Beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range as {
		running(t, a)
	}
	for _, r := range rooms {
		enter(t, q, r, "alice")
		for _, a := range as {
			a.Wake(r)
		}
	}
	for _, r := range rooms {
		waitReady(t, q, r, "alice")
	}
	byOwner := [2]int{}
	for _, r := range rooms {
		owner := members.Owner([]string{"i0", "i1"}, r)
		n0, n1 := runs[0].of(r), runs[1].of(r)
		if n0+n1 != 1 || (owner == "i0") != (n0 == 1) {
			t.Fatalf("%s (owner %s) ran %d times on i0 and %d on i1, want once on its owner", r, owner, n0, n1)
		}
		if owner == "i0" {
			byOwner[0]++
		} else {
			byOwner[1]++
		}
	}
	if byOwner[0] == 0 || byOwner[1] == 0 {
		t.Fatalf("rooms by owner %v: not shared", byOwner)
	}
}

// TestAdmitterRefillsGateOncePerIntervalBetweenTicks: runs for wake-ups
// between ticks share one interval's Gate budget: the first refills it,
// a later one within the interval takes what is left (here nothing), so
// an adaptive room woken again and again admits no more than a tick would.
func TestAdmitterRefillsGateOncePerIntervalBetweenTicks(t *testing.T) {
	q, _ := queuetest.Queue(t, 0, time.Minute)
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "ad", queue.RoomConfig{Target: 40, EntryTTL: time.Hour, Mode: queue.ModeAdaptive}); err != nil {
		t.Fatal(err)
	}
	gate := &tickGate{per: 1}
	var runs runCounts
	a := admission.New(q, admission.Options{Woken: true, Interval: never, SweepEvery: never, WakeGap: time.Millisecond,
		Gate: gate, OnAdmit: runs.onAdmit, Logger: testLogger(t)})
	running(t, a)
	enter(t, q, "ad", "alice")
	a.Wake("ad")
	waitReady(t, q, "ad", "alice")
	// bob is the first in the empty queue again: his wake-up runs the
	// room, which the gate lets admit nobody until the next interval.
	enter(t, q, "ad", "bob")
	a.Wake("ad")
	queuetest.WaitFor(t, "the run for bob", func() bool { return runs.of("ad") == 2 })
	if s := stateOf(t, q, "ad", "bob"); s != queue.Waiting {
		t.Fatalf("bob: %v, want WAITING (the interval's budget of 1 went to alice)", s)
	}
	gate.mu.Lock()
	refills := gate.refills
	gate.mu.Unlock()
	if refills != 1 {
		t.Fatalf("gate refilled %d times for two runs within an interval, want 1", refills)
	}
}

// TestAdmitterRunsSweptRoomForItsWakeUp: a room a sweep found busy waits
// for the next tick (an hour here) unless woken; its wake-up, heard after
// the sweep, runs it at once.
func TestAdmitterRunsSweptRoomForItsWakeUp(t *testing.T) {
	q, _ := queuetest.Queue(t, 10, time.Hour)
	var runs runCounts
	a := admission.New(q, admission.Options{Woken: true, Interval: never, SweepEvery: never,
		OnAdmit: runs.onAdmit, Logger: testLogger(t)})
	running(t, a)
	enter(t, q, "r1", "alice") // its event is lost: no wake-up yet
	a.Resweep()
	queuetest.WaitFor(t, "the sweep to find r1 busy", func() bool { return slices.Contains(a.Running(), "r1") })
	if n := runs.of("r1"); n != 0 {
		t.Fatalf("r1 ran %d times before its wake-up, want 0 (the next tick is an hour away)", n)
	}
	a.Wake("r1")
	waitReady(t, q, "r1", "alice")
	if n := runs.of("r1"); n != 1 {
		t.Fatalf("r1 ran %d times, want once", n)
	}
}
