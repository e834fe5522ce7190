package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

func TestETA(t *testing.T) {
	ttl := 100 * time.Second
	for _, tt := range []struct {
		name  string
		st    queue.Status
		want  int64
		known bool
		ok    bool
	}{
		{"measured", queue.Status{Position: 100, Rate: 10, Target: 20}, 10, true, true},
		// no rate yet: 20 ÷ 0.2 s = 100/s
		{"guess", queue.Status{Position: 100, Target: 20}, 1, false, true},
		{"nobody admitted", queue.Status{Position: 100}, 0, false, false},
		// half of those who queued left: only 50 of the 100 ahead need admitting
		{"departures ahead", queue.Status{Position: 100, Rate: 10, Target: 20,
			Flow: queue.Flow{Admitted: 100, Departed: 100}}, 5, true, true},
		// 10 % no-shows with a 100 s window: at most 20 ÷ (0.1 × 100) = 2/s
		{"no-shows bound the measured rate", queue.Status{Position: 100, Rate: 10, Target: 20,
			Flow: queue.Flow{Admitted: 100, Expired: 10, EntryTTL: ttl}}, 50, true, true},
		// guess: hold = 0.9 × 0.2 + 0.1 × 100 = 10.18 s; 20 ÷ 10.18 = 1.96/s
		{"no-shows in the guess", queue.Status{Position: 100, Target: 20,
			Flow: queue.Flow{Admitted: 100, Expired: 10, EntryTTL: ttl}}, 51, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.st.ETA()
			if got != tt.want || ok != tt.ok || tt.st.ETAKnown() != tt.known {
				t.Fatalf("ETA = %d %v known %v, want %d %v known %v", got, ok, tt.st.ETAKnown(), tt.want, tt.ok, tt.known)
			}
		})
	}
}

// TestStatusCarriesFlow: the status read from Redis carries the counters
// the ETA corrects with, and ETAKnown turns true once a rate is measured.
func TestStatusCarriesFlow(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix, RateWindow: 50 * time.Millisecond})
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 1, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		mustEnter(t, q, fmt.Sprintf("u%d", i))
	}
	mustEnter(t, q, "d")
	if _, err := q.Leave(ctx, "r1", "u1"); err != nil {
		t.Fatal(err)
	}
	st, err := q.Status(ctx, "r1", "d")
	if err != nil || st.ETAKnown() || st.Departed != 1 || st.EntryTTL != time.Minute {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if _, ok := st.ETA(); !ok {
		t.Fatal("no ETA guess with target 1")
	}
	waitFor(t, "a measured rate", func() bool {
		res, err := q.Admit(ctx, "r1", 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range res.Admitted {
			_, _ = q.Leave(ctx, "r1", u) // free the slot for the next one
		}
		st, err = q.Status(ctx, "r1", "d")
		return err == nil && st.ETAKnown()
	})
	if st.State != queue.Waiting || st.Admitted < 1 {
		t.Fatalf("status after admissions = %+v", st)
	}
	snaps, err := q.Snapshots(ctx, []string{"r1"})
	if err != nil || snaps[0].Departed != st.Departed || snaps[0].Admitted != st.Admitted || snaps[0].EntryTTL != time.Minute {
		t.Fatalf("snapshot = %+v, %v; status %+v", snaps, err, st)
	}
}
