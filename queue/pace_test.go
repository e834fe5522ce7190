package queue_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"waitingroom/queue/queuetest"
)

// TestAdmissionPace: a room whose cfg holds a pace (the adaptive
// controller's admissions a second) admits from a token bucket of a fifth
// of a second's: a full bucket at first, then never more than the pace
// refills, whatever the free slots; without a pace the free slots alone
// bound the run again.
func TestAdmissionPace(t *testing.T) {
	q, rdb := queuetest.Queue(t, 100, time.Minute)
	ctx := context.Background()
	for i := range 50 {
		mustEnter(t, q, fmt.Sprintf("u%02d", i))
	}
	if err := rdb.HSet(ctx, q.RoomKey("r1", "cfg"), "pace", "20").Err(); err != nil {
		t.Fatal(err)
	}
	t1, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(queuetest.Admit(t, q, 64).Admitted); got != 4 {
		t.Fatalf("first paced run admitted %d; want the full bucket, 4 (20/s ÷ 5)", got)
	}
	total := 4
	for range 5 {
		total += len(queuetest.Admit(t, q, 64).Admitted)
	}
	t2, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if most := 4 + int(math.Floor(20*t2.Sub(t1).Seconds())); total > most {
		t.Fatalf("six paced runs over %v admitted %d; at most %d (the bucket and 20 a second)", t2.Sub(t1), total, most)
	}
	if err := rdb.HDel(ctx, q.RoomKey("r1", "cfg"), "pace").Err(); err != nil {
		t.Fatal(err)
	}
	if got := len(queuetest.Admit(t, q, 64).Admitted); got != 50-total {
		t.Fatalf("unpaced run admitted %d; want the %d still waiting", got, 50-total)
	}
}
