package admission_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/admission"
	"waitingroom/queue/queuetest"
)

// TestOpeningWithTwoAdmittersIsAtomicAndIdempotent: two admission loops
// tick concurrently across the opening time. The pre-queue becomes the
// queue once: contiguous fresh tickets in arrival order (fifo), one open
// event, nobody lost or duplicated; late arrivals queue behind.
func TestOpeningWithTwoAdmittersIsAtomicAndIdempotent(t *testing.T) {
	q, rdb := queuetest.Queue(t, 0, time.Minute)
	prefix := strings.TrimSuffix(q.RoomKey("r1", ""), "{r1}:")
	ctx := context.Background()
	// Someone already waits in the room before the sale is scheduled.
	early := queuetest.Enter(t, q, "early")
	far := queuetest.RedisNow(t, rdb).Add(time.Hour)
	queuetest.Update(t, q, "r1", queue.RoomUpdate{OpensAt: &far})
	const n = 40
	for i := range n {
		st := queuetest.Enter(t, q, "p"+strconv.Itoa(i))
		if st.State != queue.PreQueue || st.Position != int64(i+2) || st.OpensAt.IsZero() || st.OpensIn <= 0 {
			t.Fatalf("pre-queue status %d: %+v", i, st)
		}
	}
	again := queuetest.Enter(t, q, "p3")
	if again.State != queue.PreQueue || again.Position != 5 || again.New {
		t.Fatalf("re-enter in the pre-queue: %+v", again)
	}
	if _, err := q.Leave(ctx, "r1", "p39"); err != nil {
		t.Fatal(err)
	}
	a1 := admission.New(q, admission.Options{Logger: testLogger(t)})
	a2 := admission.New(q, admission.Options{Logger: testLogger(t)})
	if err := a1.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := q.Room(ctx, "r1"); info.PreQueue != n-1 || info.Waiting != 1 {
		t.Fatalf("before the opening time: preQueue %d waiting %d", info.PreQueue, info.Waiting)
	}

	ps := rdb.Subscribe(ctx, q.RoomKey("r1", "events"))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	soon := queuetest.RedisNow(t, rdb).Add(300 * time.Millisecond)
	queuetest.Update(t, q, "r1", queue.RoomUpdate{OpensAt: &soon})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, a := range []*admission.Admitter{a1, a2} {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := a.Tick(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	queuetest.WaitFor(t, "the opening", func() bool {
		info, err := q.Room(ctx, "r1")
		return err == nil && info.PreQueue == 0
	})
	// Arrives after the opening: behind everyone, fifo.
	late := queuetest.Enter(t, q, "late")
	close(stop)
	wg.Wait()

	users, tickets := queuetest.Order(t, rdb, prefix, "r1")
	want := []string{"early"}
	for i := range n - 1 {
		want = append(want, "p"+strconv.Itoa(i))
	}
	want = append(want, "late")
	if !slices.Equal(users, want) {
		t.Fatalf("queue after opening = %v, want %v", users, want)
	}
	for i, tk := range tickets {
		if tk != early.Ticket+int64(i) {
			t.Fatalf("tickets %v are not contiguous from %d", tickets, early.Ticket)
		}
	}
	if late.State != queue.Waiting || late.Position != n+1 {
		t.Fatalf("late arrival: %+v", late)
	}
	st, err := q.Status(ctx, "r1", "p0")
	if err != nil || st.State != queue.Waiting || st.Position != 2 || st.Ticket != early.Ticket+1 {
		t.Fatalf("status after opening: %+v, %v", st, err)
	}
	// Exactly one open event among what was published.
	if opens := queuetest.OpenEvents(ctx, ps); opens != 1 {
		t.Fatalf("open events = %d, want 1", opens)
	}
	if res, err := q.Open(ctx, "r1", queue.NewShuffleSeed()); err != nil || res.Moved != 0 {
		t.Fatalf("a second opening moved %+v, %v", res, err)
	}
}
