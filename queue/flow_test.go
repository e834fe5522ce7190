package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"waitingroom/queue"
)

// TestSnapshotCarriesFlow: a room's snapshot carries what the ETA is
// estimated from — the counters, the slots held by time left on their
// deadline, and each ended order's hold (admission to release), counted
// when its slot is released.
func TestSnapshotCarriesFlow(t *testing.T) {
	q, _ := mustQueue(t, 3, 48*time.Second)
	ctx := context.Background()
	for i := range 5 {
		mustEnter(t, q, fmt.Sprintf("u%d", i))
	}
	if _, err := q.Leave(ctx, "r1", "u4"); err != nil {
		t.Fatal(err)
	}
	res := mustAdmit(t, q, 3)
	if len(res.Admitted) != 3 {
		t.Fatalf("admitted %v", res.Admitted)
	}
	toks := map[string]string{}
	for _, u := range res.Admitted {
		st, err := q.Status(ctx, "r1", u)
		if err != nil || st.State != queue.Ready {
			t.Fatalf("status %s = %+v, %v", u, st, err)
		}
		toks[u] = st.EntryToken
	}
	time.Sleep(50 * time.Millisecond) // a hold of at least this
	c, err := q.Consume(ctx, "r1", "u0", toks["u0"], 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := q.Release(ctx, c); err != nil || !ok {
		t.Fatalf("release = %v, %v", ok, err)
	}
	// An order in flight: its slot's deadline is the 10 s allowance.
	if _, err := q.Consume(ctx, "r1", "u1", toks["u1"], 10*time.Second); err != nil {
		t.Fatal(err)
	}
	snaps, err := q.Snapshots(ctx, []string{"r1"})
	if err != nil {
		t.Fatal(err)
	}
	f := snaps[0].Flow
	if f.Admitted != 3 || f.Departed != 1 || f.Expired != 0 || f.Active != 2 || f.EntryTTL != 48*time.Second {
		t.Fatalf("flow = %+v", f)
	}
	if f.Holds != 1 || f.HoldTime < 50*time.Millisecond || f.HoldTime > 10*time.Second {
		t.Fatalf("holds %d, hold time %v; want 1 of at least 50 ms", f.Holds, f.HoldTime)
	}
	// 48 s in 24 bins of 2 s (and one for all beyond): u1's order in
	// flight ends 8–10 s from now, u2's window 46–48 s from now.
	if len(f.Remaining) != 25 || f.Bin != 2*time.Second || f.Remaining[4] != 1 || f.Remaining[23] != 1 {
		t.Fatalf("bins of %v: %v", f.Bin, f.Remaining)
	}
}
