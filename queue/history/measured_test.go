package history_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/estimate"
	"waitingroom/queue/history"
	"waitingroom/queue/queuetest"
)

// TestKeepsWhatWasMeasured: the recorder keeps a measured forecast's hold
// and no-show share for the room's next sale (read back by its
// snapshots), never a provisional forecast's.
func TestKeepsWhatWasMeasured(t *testing.T) {
	q, rdb := queuetest.Queue(t, 10, time.Minute)
	ctx := context.Background()
	// a room seen for a minute and a half: 5 orders a second ending, 2 s
	// each, 5 admitted a second, none unused
	var e estimate.Estimator
	var measured estimate.Forecast
	t0 := time.Now().Add(-2 * time.Minute)
	for k := int64(0); k <= 90; k++ {
		measured = e.Observe(estimate.Sample{At: t0.Add(time.Duration(k) * time.Second), Target: 10, EntryTTL: time.Minute,
			Admitted: 5 * k, Holds: 5 * k, HoldTime: time.Duration(5*k) * 2 * time.Second,
			Remaining: make([]int64, 25), Bin: 2500 * time.Millisecond})
	}
	var p estimate.Estimator // a room that has measured nothing, expecting 7 s orders
	provisional := p.Observe(estimate.Sample{At: time.Now(), Target: 10, EntryTTL: time.Minute,
		Remaining: make([]int64, 25), Bin: 2500 * time.Millisecond, Prior: estimate.Prior{Hold: 7 * time.Second}})
	if !measured.Known || measured.Provisional || !provisional.Provisional {
		t.Fatalf("set-up: %+v, %+v", measured, provisional)
	}
	var fc atomic.Pointer[estimate.Forecast]
	fc.Store(&provisional)
	h := history.New(rdb, q, nil).WithForecasts(func(string) estimate.Forecast { return *fc.Load() })
	mustEnter(t, q, "u1")
	expected := func() queue.Expectation {
		snaps, err := q.Snapshots(ctx, []string{"r1"})
		if err != nil {
			t.Fatal(err)
		}
		return snaps[0].Expected
	}
	recorded := 0
	queuetest.WaitFor(t, "2 recorded seconds", func() bool {
		if ok, err := h.Record(ctx, "r1"); err != nil {
			t.Fatal(err)
		} else if ok {
			recorded++
		}
		return recorded >= 2
	})
	if got := expected(); got.LastKnown {
		t.Fatalf("a provisional forecast was kept: %+v", got)
	}
	fc.Store(&measured)
	queuetest.WaitFor(t, "the measured figures kept", func() bool {
		if _, err := h.Record(ctx, "r1"); err != nil {
			t.Fatal(err)
		}
		return expected().LastKnown
	})
	if got := expected(); got.LastHold != measured.Hold || got.LastNoShow != measured.NoShow {
		t.Fatalf("kept %+v, want the hold %v and no-show share %v", got, measured.Hold, measured.NoShow)
	}
	// Nobody waits (u1 admitted, the room still at work): the sale's
	// figures stand, whatever its last slots measure now.
	queuetest.Admit(t, q, 8)
	later := measured
	later.Hold, later.NoShow = 9*time.Second, 0.5
	fc.Store(&later)
	recorded = 0
	queuetest.WaitFor(t, "2 more recorded seconds", func() bool {
		if ok, err := h.Record(ctx, "r1"); err != nil {
			t.Fatal(err)
		} else if ok {
			recorded++
		}
		return recorded >= 2
	})
	if got := expected(); got.LastHold != measured.Hold || got.LastNoShow != measured.NoShow {
		t.Fatalf("with nobody waiting the kept figures became %+v; want the sale's %v, %v", got, measured.Hold, measured.NoShow)
	}
}
