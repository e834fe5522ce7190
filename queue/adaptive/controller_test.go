package adaptive_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/adaptive"
	"waitingroom/queue/queuetest"
)

// mustQueue is a queue with one room, "r1" (queuetest.Queue).
var mustQueue = queuetest.Queue

// The shared helpers, under the names these tests use.
var (
	mustEnter = queuetest.Enter
	mustAdmit = queuetest.Admit
)

func mustAdaptive(tb testing.TB, q *queue.Queue, target int64) {
	tb.Helper()
	m := queue.ModeAdaptive
	if _, err := q.UpdateRoom(context.Background(), "r1", queue.RoomUpdate{Mode: &m, Target: &target}, false, queue.RoomConfig{}); err != nil {
		tb.Fatal(err)
	}
}

// TestControllerCutsOnSlowWindow: orders recorded by two instances reach
// one window's signals in Redis under the room's hash tag; the step that
// reads a healthy window sets the baseline, one that reads a window with
// pool stress cuts the limit ×0.8 and records the change.
func TestControllerCutsOnSlowWindow(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 20, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	mustAdaptive(t, q, 20)
	// Twenty admitted users, so the limit is in use.
	for i := range 20 {
		mustEnter(t, q, "u"+string(rune('a'+i)))
	}
	mustAdmit(t, q, 32)
	const win = time.Second
	rule := adaptive.Rule{Min: 2, Max: 40, MinSamples: 10, Ceiling: time.Second}
	ctl := adaptive.NewController(rdb, q, adaptive.Options{Window: win, Rule: rule, Owner: "a"})
	a, b := adaptive.NewRecorder(rdb, q, win), adaptive.NewRecorder(rdb, q, win)
	t0 := time.UnixMilli(1_000_000 * win.Milliseconds())

	// Window 0: healthy, 10 ms orders from two instances.
	for i := range 20 {
		r := a
		if i%2 == 1 {
			r = b
		}
		r.Order("r1", 10*time.Millisecond, false, t0.Add(time.Duration(i)*time.Millisecond))
	}
	a.Pool(adaptive.PoolUse{Acquires: 10, Wait: 10 * time.Millisecond}, t0)
	for _, r := range []*adaptive.Recorder{a, b} {
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := rdb.Keys(ctx, prefix+"*sig:*").Result()
	if err != nil || len(keys) != 1 || !strings.HasPrefix(keys[0], prefix+"{r1}:sig:") {
		t.Fatalf("signal keys = %v, %v; want one under the room's hash tag", keys, err)
	}
	st, err := ctl.Step(ctx, "r1", t0.Add(win+win/2))
	if err != nil || !st.Leader {
		t.Fatalf("step = %v, %v", st, err)
	}
	if st.Signals.Orders != 20 || st.Signals.P90 < 5*time.Millisecond || st.Signals.P90 > 10*time.Millisecond || st.Signals.PoolWait != time.Millisecond {
		t.Fatalf("healthy signals = %+v", st.Signals)
	}
	state, err := ctl.State(ctx, "r1")
	if err != nil || state.Signals.Baseline != st.Signals.P90 || state.LastChange == nil || state.LastChange.To != st.Next {
		t.Fatalf("state after a healthy window = %+v (last change %+v), %v; step %v", state, state.LastChange, err, st)
	}
	limit := st.Next

	// Window 1: slow orders waiting 80 ms for the pool.
	t1 := t0.Add(win)
	for range 20 {
		a.Order("r1", 300*time.Millisecond, false, t1)
	}
	a.Pool(adaptive.PoolUse{Acquires: 20, Wait: 20 * 80 * time.Millisecond}, t1)
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err = ctl.Step(ctx, "r1", t1.Add(win+win/2))
	if err != nil || !st.Leader || !st.Changed || st.Reason != adaptive.ReasonPoolWait || st.Next != limit*8/10 {
		t.Fatalf("stressed step = %v, %v (limit was %d)", st, err, limit)
	}
	info, _ := q.Room(ctx, "r1")
	state, _ = ctl.State(ctx, "r1")
	if info.Target != st.Next || state.LastChange.Reason != adaptive.ReasonPoolWait || state.LastChange.From != limit {
		t.Fatalf("target %d, last change %+v", info.Target, state.LastChange)
	}
	// The stressed window did not raise the baseline.
	if state.Signals.Baseline > 10*time.Millisecond {
		t.Fatalf("baseline after a stressed window = %v", state.Signals.Baseline)
	}

	// Window 2: nobody reported. The limit holds; the state says stale.
	st, err = ctl.Step(ctx, "r1", t1.Add(2*win+win/2))
	if err != nil || st.Changed || st.Reason != adaptive.ReasonStale {
		t.Fatalf("empty window step = %v, %v", st, err)
	}
}

// TestControllerLease: instances stepping the same room in the same window
// take turns by lease: exactly one acts per window.
func TestControllerLease(t *testing.T) {
	q, rdb := mustQueue(t, 20, time.Minute)
	ctx := context.Background()
	mustAdaptive(t, q, 20)
	const win = time.Second
	ctls := make([]*adaptive.Controller, 4)
	for i := range ctls {
		ctls[i] = adaptive.NewController(rdb, q, adaptive.Options{Window: win, Rule: adaptive.Rule{Min: 2, Max: 40, MinSamples: 1}, Owner: string(rune('a' + i))})
	}
	t0 := time.UnixMilli(2_000_000 * win.Milliseconds())
	for w := range 5 {
		now := t0.Add(time.Duration(w)*win + win/2)
		var mu sync.Mutex
		leaders := 0
		var wg sync.WaitGroup
		for _, c := range ctls {
			wg.Go(func() {
				st, err := c.Step(ctx, "r1", now)
				if err != nil {
					t.Error(err)
				}
				if st.Leader {
					mu.Lock()
					leaders++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if leaders != 1 {
			t.Fatalf("window %d: %d leaders, want 1", w, leaders)
		}
	}
}

// TestModeFixedKeepsTarget: a fixed room's signals are kept (a warm
// baseline for switching) but its target never moves.
func TestModeFixedKeepsTarget(t *testing.T) {
	q, rdb := mustQueue(t, 7, time.Minute)
	ctx := context.Background()
	const win = time.Second
	ctl := adaptive.NewController(rdb, q, adaptive.Options{Window: win, Rule: adaptive.Rule{Min: 10, Max: 40, MinSamples: 1}})
	r := adaptive.NewRecorder(rdb, q, win)
	t0 := time.UnixMilli(3_000_000 * win.Milliseconds())
	r.Order("r1", 20*time.Millisecond, false, t0)
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := ctl.Step(ctx, "r1", t0.Add(win+win/2))
	if err != nil || st.Changed {
		t.Fatalf("step = %v, %v", st, err)
	}
	info, _ := q.Room(ctx, "r1")
	state, _ := ctl.State(ctx, "r1")
	if info.Target != 7 || info.Mode != queue.ModeFixed || state.Signals.Orders != 1 || state.Signals.Baseline == 0 {
		t.Fatalf("room %+v, state %+v", info, state)
	}
}

// TestControllerCapacity: the admission runs and the pool's use recorded
// by the instance that runs the room reach the window's signals; a window
// whose pool was full with acquires queued cuts the limit to the capacity
// at once; the next window holds (users admitted before the cut drain),
// and one whose pool was mostly idle while users waited grows it, for a
// few windows only to below the limit that queued.
func TestControllerCapacity(t *testing.T) {
	q, rdb := mustQueue(t, 40, time.Minute)
	ctx := context.Background()
	mustAdaptive(t, q, 40)
	const win = time.Second
	ctl := adaptive.NewController(rdb, q, adaptive.Options{Window: win, Rule: adaptive.Rule{Min: 2, Max: 100, MinSamples: 10}, Owner: "a"})
	r := adaptive.NewRecorder(rdb, q, win)
	t0 := time.UnixMilli(4_000_000 * win.Milliseconds())
	window := func(at time.Time, held time.Duration, queued float64) adaptive.Step {
		t.Helper()
		for i := range 20 {
			r.Admission("r1", 40, 100, 40, at.Add(time.Duration(i)*10*time.Millisecond))
			r.Order("r1", 300*time.Millisecond, false, at)
		}
		r.Pool(adaptive.PoolUse{Acquires: 20, Wait: time.Duration(queued * float64(win)), Held: held, Capacity: 4 * win}, at)
		return mustStep(t, ctl, r, at, win)
	}
	// Pool of 4 busy all the window, 10 acquires waiting on average:
	// 0.95 × (40 − 10) ÷ 1 = 28.5.
	st := window(t0, 4*win, 10)
	if s := st.Signals; s.Utilization != 1 || s.Queue != 10 || s.Active != 40 || s.Bound != 1 {
		t.Fatalf("signals = %+v", s)
	}
	if !st.Changed || st.Next != 28 || st.Reason != adaptive.ReasonPoolWait {
		t.Fatalf("full pool step = %v", st)
	}
	// Busy a fifth of the time, read while the users admitted before
	// the cut drained: it holds.
	st = window(t0.Add(win), 4*win/5, 0)
	if st.Changed || st.Next != 28 || st.Reason != adaptive.ReasonSettling {
		t.Fatalf("idle pool step after the cut = %v", st)
	}
	// Again: 0.95 × 40 ÷ 0.2 = 190, at most ×2 of 28 (56), but while
	// growth is capped below the 40 that queued two windows ago, at most
	// ×1.25: 35.
	st = window(t0.Add(2*win), 4*win/5, 0)
	if !st.Changed || st.Next != 35 || st.Reason != adaptive.ReasonCapacity {
		t.Fatalf("idle pool step = %v", st)
	}
	if state, _ := ctl.State(ctx, "r1"); state.Ceiling.Limit != 39 || state.Signals.Hold != 40*time.Millisecond {
		t.Fatalf("state = %+v, want the ceiling 39 and a 40 ms hold", state)
	}
	// Five windows on, the cap is gone: ×2 of 35.
	st = window(t0.Add(7*win), 4*win/5, 0)
	if !st.Changed || st.Next != 70 || st.Reason != adaptive.ReasonCapacity {
		t.Fatalf("idle pool step later = %v", st)
	}
	if info, _ := q.Room(ctx, "r1"); info.Target != 70 {
		t.Fatalf("target = %d, want 70", info.Target)
	}
}

// TestBoundNeedsTheLimitTaken: a run that left users waiting beside free
// slots (passed over as absent) is no sign the limit bound; one that left
// them waiting with every slot taken is.
func TestBoundNeedsTheLimitTaken(t *testing.T) {
	q, rdb := mustQueue(t, 40, time.Minute)
	mustAdaptive(t, q, 40)
	const win = time.Second
	ctl := adaptive.NewController(rdb, q, adaptive.Options{Window: win, Rule: adaptive.Rule{Min: 2, Max: 100, MinSamples: 10}, Owner: "a"})
	r := adaptive.NewRecorder(rdb, q, win)
	at := time.UnixMilli(6_000_000 * win.Milliseconds())
	for i := range 10 {
		r.Admission("r1", 40, 100, 40, at.Add(time.Duration(i)*10*time.Millisecond)) // every slot taken
		r.Admission("r1", 30, 100, 40, at.Add(time.Duration(i)*10*time.Millisecond)) // ten free
		r.Admission("r1", 40, 0, 40, at.Add(time.Duration(i)*10*time.Millisecond))   // nobody left waiting
		r.Order("r1", 300*time.Millisecond, false, at)
		r.Order("r1", 300*time.Millisecond, false, at)
	}
	r.Pool(adaptive.PoolUse{Acquires: 20, Held: win, Capacity: 4 * win}, at)
	st := mustStep(t, ctl, r, at, win)
	if b := st.Signals.Bound; b < 0.33 || b > 0.34 {
		t.Fatalf("bound share %.3f, want a third (only the runs with every slot taken)", b)
	}
}

// mustStep flushes r and steps room r1 for the window of at, half a
// window after it ended, as the leader.
func mustStep(t *testing.T, ctl *adaptive.Controller, r *adaptive.Recorder, at time.Time, win time.Duration) adaptive.Step {
	t.Helper()
	ctx := context.Background()
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := ctl.Step(ctx, "r1", at.Add(win+win/2))
	if err != nil || !st.Leader {
		t.Fatalf("step = %v, %v", st, err)
	}
	return st
}
